{"instructions": [
  {"execution_id": "b", "tool_definition_path": "/tools/t.tool", "arguments": {"v": 2}},
  {"execution_id": "a", "tool_definition_path": "/tools/t.tool", "arguments": {"v": 1}}]}
