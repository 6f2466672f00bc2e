{
  "instructions": [
    {"execution_id": "alarm", "tool_definition_path": "/tools/ansi.tool"}
  ]
}
