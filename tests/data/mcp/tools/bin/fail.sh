#!/bin/sh
# Always fails, saying why on standard error.
cat >/dev/null
echo 'the disk is on fire' >&2
exit 3
