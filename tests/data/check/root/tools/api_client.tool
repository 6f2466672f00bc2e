{
  "description": "Stub for the checker's tests: api client",
  "arguments": [
    {
      "name": "endpoint",
      "type_name": "string",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "response_data",
      "type_name": "object"
    },
    {
      "name": "metadata",
      "type_name": "object"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
