#!/bin/sh
# Basic facts about one document: its name, size in words, pages (40 lines a page), title.
# In: {"document_path": "..."}  Out: {"filename", "page_count", "word_count", "status", "summary"}
set -eu
. "$(dirname "$0")/json.sh"
input=$(cat)
path=$(field document_path)
[ -r "$path" ] || { echo "cannot read $path" >&2; exit 1; }
lines=$(wc -l < "$path" | tr -d ' ')
words=$(wc -w < "$path" | tr -d ' ')
pages=$(( lines / 40 + 1 ))
title=$(head -n 1 "$path")
printf '{"filename":"%s","page_count":%s,"word_count":%s,"status":"extracted","summary":"%s"}\n' \
  "$(esc "$(basename "$path")")" "$pages" "$words" "$(esc "$title")"
