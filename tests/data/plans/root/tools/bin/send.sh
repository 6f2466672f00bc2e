#!/bin/sh
# Fake mail: accepts anything with a recipient. In: {"to", "subject", "body", "urgent"?}
set -eu
. "$(dirname "$0")/json.sh"
input=$(cat)
[ -n "$(field to)" ] || { echo "no recipient" >&2; exit 1; }
printf '{"sent":true,"message_id":"msg-%s"}\n' "$(field to | tr -cd 'a-z0-9' | head -c 12)"
