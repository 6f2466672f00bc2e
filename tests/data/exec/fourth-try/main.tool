{"instructions": [
  {"execution_id": "s", "tool_definition_path": "/tools/recovers.tool",
   "retry": {"max_retries": 4, "base_delay_seconds": 1, "jitter": 0}},
  {"execution_id": "after", "tool_definition_path": "/tools/t.tool", "arguments": {"x": "REF:s.ok"}}
]}
