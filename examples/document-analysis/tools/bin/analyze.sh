#!/bin/sh
# A closer look at one document: its most frequent words of five letters or more.
# In: {"document_path", "analysis_mode", "context_data"}  Out: {"insights", "key_findings", "metadata"}
set -eu
. "$(dirname "$0")/json.sh"
input=$(cat)
path=$(field document_path)
mode=$(field analysis_mode)
top=$(tr -cs 'A-Za-z' '\n' < "$path" | tr 'A-Z' 'a-z' | grep '.....' | sort | uniq -c | sort -k1,1nr -k2 |
  head -n 3 | awk '{print $2}' | paste -s -d, - | sed 's/,/, /g')
sentences=$(tr -cd '.!?' < "$path" | wc -c | tr -d ' ')
printf '{"insights":"%s: %s sentences","key_findings":"%s","metadata":{"file":"%s","mode":"%s"}}\n' \
  "$(esc "$(basename "$path")")" "$sentences" "$(esc "$(basename "$path"): $top")" "$(esc "$path")" "$(esc "$mode")"
