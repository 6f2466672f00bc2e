{
  "description": "Stub for the checker's tests: file scanner",
  "arguments": [],
  "responses": [
    {
      "name": "documents",
      "type_name": "list<file>",
      "required": true
    },
    {
      "name": "important_files",
      "type_name": "list<string>"
    },
    {
      "name": "file_list",
      "type_name": "list<file>",
      "required": true
    },
    {
      "name": "primary_file",
      "type_name": "file"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
