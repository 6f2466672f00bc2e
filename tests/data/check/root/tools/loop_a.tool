{
  "description": "Calls loop_b, which calls this tool back",
  "instructions": [
    {"execution_id": "again", "tool_definition_path": "/tools/loop_b.tool"}
  ]
}
