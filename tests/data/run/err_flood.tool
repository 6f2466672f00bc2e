{
  "instructions": [
    {"execution_id": "call", "tool_definition_path": "/tools/flood_err.tool"}
  ]
}
