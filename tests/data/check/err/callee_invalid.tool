{
  "instructions": [
    {"execution_id": "fix", "tool_definition_path": "/tools/broken.tool"}
  ]
}
