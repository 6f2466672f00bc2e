{
  "description": "Stub for the checker's tests: error",
  "arguments": [],
  "responses": [
    {
      "name": "message",
      "type_name": "string"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
