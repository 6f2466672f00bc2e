{
  "instructions": [
    {"execution_id": "response", "tool_definition_path": "/tools/a.tool"}
  ]
}
