{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool", "dependancies": ["b"]},
    {"execution_id": "b", "tool_definition_path": "/tools/b.tool"}
  ]
}
