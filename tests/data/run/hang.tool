{
  "instructions": [
    {"execution_id": "stuck", "tool_definition_path": "/tools/hang.tool", "timeout_seconds": 0.3},
    {"execution_id": "never", "tool_definition_path": "/tools/echo.tool", "arguments": {"x": "REF:stuck.x"}}
  ]
}
