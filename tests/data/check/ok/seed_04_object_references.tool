{
  "description": "Seed example: Object References",
  "instructions": [
    {
      "execution_id": "api_call",
      "tool_definition_path": "/tools/api_call.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "arguments": {
        "user_data": "REF:api_call.response",
        "user_name": "REF:api_call.response.name",
        "user_email": "REF:api_call.response.profile.email"
      }
    }
  ]
}
