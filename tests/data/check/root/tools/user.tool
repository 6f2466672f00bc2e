{
  "description": "Stub for the checker's tests: user",
  "arguments": [],
  "responses": [
    {
      "name": "role",
      "type_name": "string"
    },
    {
      "name": "level",
      "type_name": "integer"
    },
    {
      "name": "verified",
      "type_name": "boolean"
    },
    {
      "name": "email",
      "type_name": "string"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
