#!/bin/sh
# In: {"error_count", "error_summary"}  Out: {"status", "message"}
set -eu
input=$(cat | tr -d '\n')
count=$(printf '%s' "$input" | sed -n 's/.*"error_count": *\([0-9]*\).*/\1/p')
summary=$(printf '%s' "$input" | sed -n 's/.*"error_summary": *"\([^"]*\)".*/\1/p')
printf '{"status":"rejected","message":"%s invalid record(s): %s"}\n' "${count:-0}" "$summary"
