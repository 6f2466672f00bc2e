{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool", "done_check": true}
  ]
}
