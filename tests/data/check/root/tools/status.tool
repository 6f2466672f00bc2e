{
  "description": "Stub for the checker's tests: status",
  "arguments": [],
  "responses": [
    {
      "name": "code",
      "type_name": "integer"
    },
    {
      "name": "result",
      "type_name": "string"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
