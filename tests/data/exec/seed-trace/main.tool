{"instructions": [
  {"execution_id": "ok", "tool_definition_path": "/tools/t.tool"},
  {"execution_id": "flaky", "tool_definition_path": "/tools/f.tool", "arguments": {"flaky": true},
   "retry": {"max_retries": 2, "base_delay_seconds": 1, "jitter": 0}},
  {"execution_id": "broken", "tool_definition_path": "/tools/broken.tool", "arguments": {"fail": true},
   "continue_on_error": true},
  {"execution_id": "skipped", "tool_definition_path": "/tools/t.tool",
   "conditions": [{"param": "REF:ok.x", "operator": "exists"}]}
]}
