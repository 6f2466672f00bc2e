{
  "description": "Stub for the checker's tests: scanner",
  "arguments": [],
  "responses": [
    {
      "name": "files",
      "type_name": "list<file>",
      "required": true
    },
    {
      "name": "total_bytes",
      "type_name": "integer"
    },
    {
      "name": "metadata",
      "type_name": "object"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
