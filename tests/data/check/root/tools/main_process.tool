{
  "description": "Stub for the checker's tests: main process",
  "arguments": [],
  "responses": [
    {
      "name": "temporary_files",
      "type_name": "list<string>"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
