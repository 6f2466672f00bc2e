{
  "description": "Seed example: Use Simple REF for Direct References",
  "instructions": [
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
