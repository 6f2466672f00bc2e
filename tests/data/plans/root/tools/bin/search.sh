#!/bin/sh
# Fake search: three fixed pages about the query. In: {"query", "limit"?}
set -eu
. "$(dirname "$0")/json.sh"
input=$(cat)
q=$(esc "$(field query)")
printf '{"results":[{"title":"%s: overview","url":"https://example.org/a"},{"title":"%s: details","url":"https://example.org/b"},{"title":"%s: news","url":"https://example.org/c"}],"total":3}\n' "$q" "$q" "$q"
