{
  "description": "Stub for the checker's tests: metrics",
  "arguments": [],
  "responses": [
    {
      "name": "score",
      "type_name": "number"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
