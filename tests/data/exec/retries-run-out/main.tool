{"instructions": [
  {"execution_id": "s", "tool_definition_path": "/tools/flaky.tool", "retry": {"max_retries": 1, "base_delay_seconds": 0.5}},
  {"execution_id": "after", "tool_definition_path": "/tools/t.tool", "arguments": {"x": "REF:s.ok"}}
]}
