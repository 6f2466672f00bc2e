{"instructions": [
  {"execution_id": "s", "tool_definition_path": "/tools/flaky.tool"},
  {"execution_id": "after", "tool_definition_path": "/tools/t.tool", "arguments": {"x": "REF:s.ok"}}
]}
