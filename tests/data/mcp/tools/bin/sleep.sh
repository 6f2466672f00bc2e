#!/bin/sh
# In: {"pid_file", "seconds"}  Out: {"slept": seconds}
# Writes "<its pid> <the sleep's pid>" to pid_file (atomically, so a reader never sees half
# of it), then sleeps: the MCP cancellation test checks that both processes are gone after
# the call is cancelled.
set -eu
input=$(cat | tr -d '\n')
pid_file=$(printf '%s' "$input" | sed -n 's/.*"pid_file": *"\([^"]*\)".*/\1/p')
seconds=$(printf '%s' "$input" | sed -n 's/.*"seconds": *\([0-9.]*\).*/\1/p')
sleep "$seconds" &
printf '%s %s\n' "$$" "$!" >"$pid_file.tmp"
mv "$pid_file.tmp" "$pid_file"
wait $!
printf '{"slept":%s}\n' "$seconds"
