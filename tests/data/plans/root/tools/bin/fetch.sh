#!/bin/sh
# Fake fetch: a page's text from its URL. In: {"url"}
set -eu
. "$(dirname "$0")/json.sh"
input=$(cat)
url=$(field url)
case "$url" in
  *example.org/a) text="tdsl plans are checked before they run and call only allowed tools" ;;
  *example.org/b) text="a plan fans out over a list with parallel execution" ;;
  *) text="nothing new today" ;;
esac
words=$(printf '%s' "$text" | wc -w | tr -d ' ')
printf '{"url":"%s","text":"%s","word_count":%s}\n' "$(esc "$url")" "$text" "$words"
