{
  "description": "Stub for the checker's tests: parallel process",
  "arguments": [
    {
      "name": "batch",
      "type_name": "list<string>",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "items",
      "type_name": "list<string>"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
