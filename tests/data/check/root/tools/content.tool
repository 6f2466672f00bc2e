{
  "description": "Stub for the checker's tests: content",
  "arguments": [],
  "responses": [
    {
      "name": "tags",
      "type_name": "list<string>"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
