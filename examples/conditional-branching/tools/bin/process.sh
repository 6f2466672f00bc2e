#!/bin/sh
# In: {"processing_mode", "batch_size", "processed_data"}  Out: {"status", "processed", "mode"}
set -eu
input=$(cat | tr -d '\n')
mode=$(printf '%s' "$input" | sed -n 's/.*"processing_mode": *"\([^"]*\)".*/\1/p')
size=$(printf '%s' "$input" | sed -n 's/.*"batch_size": *\([0-9]*\).*/\1/p')
printf '{"status":"processed","processed":%s,"mode":"%s"}\n' "${size:-0}" "$mode"
