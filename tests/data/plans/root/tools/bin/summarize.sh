#!/bin/sh
# Fake summary: the first five words of the text. In: {"text", "max_words"?}
set -eu
. "$(dirname "$0")/json.sh"
input=$(cat)
text=$(field text)
summary=$(printf '%s' "$text" | tr -s ' ' '\n' | head -n 5 | tr '\n' ' ' | sed 's/ $//')
printf '{"summary":"%s"}\n' "$(esc "$summary")"
