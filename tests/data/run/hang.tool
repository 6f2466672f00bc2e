{
  "instructions": [
    {"execution_id": "stuck", "tool_definition_path": "/tools/hang.tool", "timeout_seconds": 1,
     "retry": {"max_retries": 0}},
    {"execution_id": "never", "tool_definition_path": "/tools/echo.tool", "arguments": {"x": "REF:stuck.x"}}
  ]
}
