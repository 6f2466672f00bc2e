#!/bin/sh
# In: {"n"}  Out: {"n": n + 1}, after a pause of 0.3 s (so that a step's progress
# notification is out before the next step ends)
set -eu
n=$(tr -d '\n' | sed -n 's/.*"n": *\(-\{0,1\}[0-9]*\).*/\1/p')
sleep 0.3
printf '{"n":%s}\n' "$((n + 1))"
