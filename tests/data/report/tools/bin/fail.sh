#!/bin/sh
cat > /dev/null
echo "the disk is on fire" >&2
exit 1
