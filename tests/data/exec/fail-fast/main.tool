{"instructions": [
  {"execution_id": "a", "tool_definition_path": "/tools/t.tool", "arguments": {"fail": true}},
  {"execution_id": "b", "tool_definition_path": "/tools/t.tool", "arguments": {"x": "REF:a.x"}},
  {"execution_id": "c", "tool_definition_path": "/tools/t.tool", "arguments": {"y": "REF:b.x"}}
]}
