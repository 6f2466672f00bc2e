#!/bin/sh
cat > /dev/null
printf '\033[31mred alert\007\n' >&2
exit 1
