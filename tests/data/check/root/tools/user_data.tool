{
  "description": "Stub for the checker's tests: user data",
  "arguments": [],
  "responses": [
    {
      "name": "users",
      "type_name": "list"
    },
    {
      "name": "name",
      "type_name": "string"
    },
    {
      "name": "email",
      "type_name": "string"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
