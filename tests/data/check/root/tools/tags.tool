{
  "description": "Stub for the checker's tests: tags",
  "arguments": [],
  "responses": [
    {
      "name": "list",
      "type_name": "list<string>"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
