#!/bin/sh
# The deepest pass: reading difficulty from words per sentence.
# In: {"document_path", "combined_context", "processing_summary"}  Out: {"assessment", "words_per_sentence"}
set -eu
. "$(dirname "$0")/json.sh"
input=$(cat)
path=$(field document_path)
words=$(wc -w < "$path" | tr -d ' ')
sentences=$(tr -cd '.!?' < "$path" | wc -c | tr -d ' ')
[ "$sentences" -gt 0 ] || sentences=1
wps=$(( words / sentences ))
if [ "$wps" -gt 20 ]; then level="dense"; elif [ "$wps" -gt 12 ]; then level="moderate"; else level="light"; fi
printf '{"assessment":"%s reads as %s","words_per_sentence":%s}\n' "$(esc "$(basename "$path")")" "$level" "$wps"
