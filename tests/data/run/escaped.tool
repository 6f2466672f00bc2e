{
  "instructions": [
    {"execution_id": "call", "tool_definition_path": "/tools/escaped.tool"}
  ]
}
