{
  "description": "Seed example: Use Simple REF for Direct References",
  "instructions": [
    {
      "execution_id": "file_scanner",
      "tool_definition_path": "/tools/file_scanner.tool"
    },
    {
      "execution_id": "validate_user",
      "tool_definition_path": "/tools/validate_user.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "arguments": {
        "user_id": "REF:validate_user.user_id",
        "file_path": "REF:file_scanner.primary_file"
      }
    }
  ]
}
