{
  "description": "Seed example: Meaningful Execution IDs",
  "instructions": [
    {
      "execution_id": "step_1",
      "tool_definition_path": "/tools/example.tool"
    }
  ]
}
