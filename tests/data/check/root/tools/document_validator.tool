{
  "description": "Stub for the checker's tests: document validator",
  "arguments": [
    {
      "name": "file_paths",
      "type_name": "list<string>",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "validation_results",
      "type_name": "list",
      "required": true
    },
    {
      "name": "valid_documents",
      "type_name": "list<string>",
      "required": true
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
