#!/bin/sh
echo "the disk is on fire" >&2
exit 3
