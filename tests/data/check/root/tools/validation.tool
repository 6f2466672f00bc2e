{
  "description": "Stub for the checker's tests: validation",
  "arguments": [],
  "responses": [
    {
      "name": "error_count",
      "type_name": "integer"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
