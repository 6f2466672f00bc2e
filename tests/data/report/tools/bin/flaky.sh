#!/bin/sh
# Fails transiently (exit 75) until it has been called $1 times, counting calls in the file
# named by its `state` argument; then answers with the number of calls.
set -eu
input=$(cat | tr -d '\n')
state=$(printf '%s' "$input" | sed -n 's/.*"state": *"\([^"]*\)".*/\1/p')
n=$(cat "$state" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$state"
if [ "$n" -le "$1" ]; then
  echo "busy, call $n" >&2
  exit 75
fi
printf '{"calls": %s}\n' "$n"
