{
  "description": "Seed example: Use Simple REF for Direct References",
  "instructions": [
    {
      "execution_id": "validate_user",
      "tool_definition_path": "/tools/validate_user.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "user_id": "REF:validate_user.user_id"
        },
        "transforms": {
          "user_id": "user_id"
        }
      }
    }
  ]
}
