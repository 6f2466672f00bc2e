#!/bin/sh
# Checks that each document exists and is readable text.
# In: {"file_paths": [...]}  Out: {"valid_documents": [...], "validation_results": [...]}
set -eu
. "$(dirname "$0")/json.sh"
input=$(cat)
valid=""
results=""
for p in $(strings file_paths); do
  if [ -f "$p" ] && [ -r "$p" ]; then
    valid="$valid${valid:+,}\"$(esc "$p")\""
    r="{\"path\":\"$(esc "$p")\",\"is_valid\":true,\"error_message\":null}"
  else
    r="{\"path\":\"$(esc "$p")\",\"is_valid\":false,\"error_message\":\"$(esc "$p") is not a readable file\"}"
  fi
  results="$results${results:+,}$r"
done
printf '{"valid_documents":[%s],"validation_results":[%s]}\n' "$valid" "$results"
