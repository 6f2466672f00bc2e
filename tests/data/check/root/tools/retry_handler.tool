{
  "description": "Stub for the checker's tests: retry handler",
  "arguments": [
    {
      "name": "original_request",
      "type_name": "any"
    },
    {
      "name": "failure_reason",
      "type_name": "string"
    }
  ],
  "responses": [],
  "system_event_endpoint": "builtin:echo"
}
