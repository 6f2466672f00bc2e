#!/bin/sh
# Prints 200 MB on standard error, then a last line, then fails.
head -c 200000000 /dev/zero | tr '\0' 'x' >&2
echo "the last words" >&2
exit 3
