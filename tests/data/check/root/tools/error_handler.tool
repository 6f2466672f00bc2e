{
  "description": "Stub for the checker's tests: error handler",
  "arguments": [
    {
      "name": "error_message",
      "type_name": "string"
    },
    {
      "name": "error_summary",
      "type_name": "string"
    },
    {
      "name": "error_count",
      "type_name": "integer"
    }
  ],
  "responses": [],
  "system_event_endpoint": "builtin:echo"
}
