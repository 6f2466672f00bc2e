#!/bin/sh
# Sleeps the number of seconds its argument `n` says, then answers {"n": n}.
n=$(sed 's/.*"n" *: *\([0-9]*\).*/\1/')
sleep "$n"
echo "{\"n\": $n}"
