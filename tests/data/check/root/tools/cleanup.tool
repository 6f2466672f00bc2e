{
  "description": "Stub for the checker's tests: cleanup",
  "arguments": [
    {
      "name": "working_directory",
      "type_name": "string"
    },
    {
      "name": "temp_files",
      "type_name": "list<string>"
    },
    {
      "name": "should_cleanup",
      "type_name": "boolean"
    }
  ],
  "responses": [],
  "system_event_endpoint": "builtin:echo"
}
