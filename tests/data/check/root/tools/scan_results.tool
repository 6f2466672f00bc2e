{
  "description": "Stub for the checker's tests: scan results",
  "arguments": [],
  "responses": [
    {
      "name": "files",
      "type_name": "list<string>"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
