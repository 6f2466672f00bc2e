#!/bin/sh
cat >/dev/null
echo '"This is a simple text response for testing."'
