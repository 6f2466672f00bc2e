#!/bin/sh
cat >/dev/null
echo 'This tool intentionally returns an error for testing' >&2
exit 1
