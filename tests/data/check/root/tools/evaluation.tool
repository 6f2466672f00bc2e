{
  "description": "Stub for the checker's tests: evaluation",
  "arguments": [],
  "responses": [
    {
      "name": "scores",
      "type_name": "list"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
