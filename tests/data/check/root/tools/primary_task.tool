{
  "description": "Stub for the checker's tests: primary task",
  "arguments": [],
  "responses": [
    {
      "name": "status",
      "type_name": "string"
    },
    {
      "name": "error_message",
      "type_name": "string"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
