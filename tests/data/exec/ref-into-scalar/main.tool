{"instructions": [
  {"execution_id": "a", "tool_definition_path": "/tools/t.tool", "arguments": {"n": 3}},
  {"execution_id": "b", "tool_definition_path": "/tools/t.tool", "arguments": {"x": "REF:a.n.deeper"}}
]}
