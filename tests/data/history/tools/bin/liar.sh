#!/bin/sh
cat > /dev/null
echo '{"other": 1}'
