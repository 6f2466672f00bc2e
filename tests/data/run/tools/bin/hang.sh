#!/bin/sh
# Never answers (until killed).
sleep 30
echo '{}'
