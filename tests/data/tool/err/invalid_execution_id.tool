{
  "instructions": [
    {"execution_id": "step 1", "tool_definition_path": "/tools/a.tool"}
  ]
}
