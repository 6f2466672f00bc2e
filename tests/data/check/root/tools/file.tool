{
  "description": "Stub for the checker's tests: file",
  "arguments": [],
  "responses": [
    {
      "name": "size",
      "type_name": "integer"
    },
    {
      "name": "name",
      "type_name": "string"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
