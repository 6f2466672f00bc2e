{
  "description": "Stub for the checker's tests: validate user",
  "arguments": [],
  "responses": [
    {
      "name": "user_id",
      "type_name": "string",
      "required": true
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
