{"instructions": [
  {"execution_id": "s", "tool_definition_path": "/tools/flaky.tool",
   "retry": {"max_retries": 3, "base_delay_seconds": 1, "factor": 2, "jitter": 0}},
  {"execution_id": "after", "tool_definition_path": "/tools/t.tool", "arguments": {"x": "REF:s.ok"}}
]}
