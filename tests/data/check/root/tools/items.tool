{
  "description": "Stub for the checker's tests: items",
  "arguments": [],
  "responses": [
    {
      "name": "categories",
      "type_name": "list<string>"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
