{
  "description": "Stub for the checker's tests: bedrock text",
  "arguments": [
    {
      "name": "prompt",
      "type_name": "any"
    },
    {
      "name": "model_id",
      "type_name": "any"
    }
  ],
  "responses": [],
  "system_event_endpoint": "builtin:echo"
}
