#!/bin/sh
# Starts a grandchild, records both process ids in the folder the arguments name, and waits.
dir=$(sed 's/.*"dir" *: *"\([^"]*\)".*/\1/')
sleep 60 &
echo $! >> "$dir/pids"
echo $$ >> "$dir/pids"
wait
echo '{}'
