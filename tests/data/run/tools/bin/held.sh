#!/bin/sh
# Answers, and leaves a process behind that holds its standard output open.
sleep 60 &
echo $! > "${TDSL_HELD_PID_FILE:-/dev/null}"
echo '{"ok": true}'
