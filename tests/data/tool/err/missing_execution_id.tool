{
  "instructions": [
    {"tool_definition_path": "/tools/a.tool"}
  ]
}
