{
  "description": "Calls itself",
  "instructions": [
    {"execution_id": "again", "tool_definition_path": "/tools/self_caller.tool"}
  ]
}
