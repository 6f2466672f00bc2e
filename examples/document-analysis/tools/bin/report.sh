#!/bin/sh
# Writes the report text to a file.
# In: {"report_path", "report_text", "document_count"}  Out: {"report_file": {"path"}, "lines"}
set -eu
. "$(dirname "$0")/json.sh"
input=$(cat)
path=$(field report_path)
mkdir -p "$(dirname "$path")"
# The text arrives JSON-escaped: \n becomes a line break.
printf '%b\n' "$(field report_text)" > "$path"
lines=$(wc -l < "$path" | tr -d ' ')
printf '{"report_file":{"path":"%s"},"lines":%s}\n' "$(esc "$path")" "$lines"
