{
  "description": "Stub for the checker's tests: data fetch",
  "arguments": [],
  "responses": [
    {
      "name": "response",
      "type_name": "string",
      "required": true
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
