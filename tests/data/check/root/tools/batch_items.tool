{
  "description": "Stub for the checker's tests: batch items",
  "arguments": [],
  "responses": [
    {
      "name": "list",
      "type_name": "list"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
