#!/bin/sh
# Serves the document-analysis example's tools over MCP on stdio: the server the `mcp:`
# endpoints of remote/*.tool start. The tdsl binary is $TDSL, or `tdsl` on PATH.
exec "${TDSL:-tdsl}" serve --mcp --root "$(dirname "$0")/../document-analysis" --allow '/tools/*'
