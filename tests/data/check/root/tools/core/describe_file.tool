{
  "description": "Stub for the checker's tests: describe file",
  "arguments": [
    {
      "name": "file_path",
      "type_name": "any"
    }
  ],
  "responses": [],
  "system_event_endpoint": "builtin:echo"
}
