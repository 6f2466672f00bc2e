{
  "instructions": [
    {"execution_id": "spin", "tool_definition_path": "/tools/loop_a.tool"}
  ]
}
