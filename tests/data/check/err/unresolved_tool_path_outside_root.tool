{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/../../secret.tool"}
  ]
}
