{
  "instructions": [
    {"execution_id": "burn", "tool_definition_path": "/tools/broken.tool"}
  ]
}
