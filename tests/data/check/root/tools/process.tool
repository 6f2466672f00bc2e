{
  "description": "Stub for the checker's tests: process",
  "arguments": [],
  "responses": [
    {
      "name": "status",
      "type_name": "string"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
