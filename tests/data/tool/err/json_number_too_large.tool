{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool", "arguments": {"n": 1e999}}
  ]
}
