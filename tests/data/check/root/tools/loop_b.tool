{
  "description": "Calls loop_a, which calls this tool back",
  "instructions": [
    {"execution_id": "again", "tool_definition_path": "/tools/loop_a.tool"}
  ]
}
