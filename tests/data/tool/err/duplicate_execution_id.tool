{
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/a.tool"},
    {"execution_id": "fetch", "tool_definition_path": "/tools/b.tool"}
  ]
}
