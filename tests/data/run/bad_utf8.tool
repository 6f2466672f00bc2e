{
  "instructions": [
    {"execution_id": "call", "tool_definition_path": "/tools/bad_utf8.tool"}
  ]
}
