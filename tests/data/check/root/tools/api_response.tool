{
  "description": "Stub for the checker's tests: api response",
  "arguments": [],
  "responses": [
    {
      "name": "body",
      "type_name": "string",
      "required": true
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
