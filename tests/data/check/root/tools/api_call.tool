{
  "description": "Stub for the checker's tests: api call",
  "arguments": [],
  "responses": [
    {
      "name": "response_body",
      "type_name": "string"
    },
    {
      "name": "status_code",
      "type_name": "integer"
    },
    {
      "name": "error",
      "type_name": "string"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
