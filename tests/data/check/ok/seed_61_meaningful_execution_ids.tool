{
  "description": "Seed example: Meaningful Execution IDs",
  "instructions": [
    {
      "execution_id": "fetch_user_profile",
      "tool_definition_path": "/tools/example.tool"
    }
  ]
}
