{
  "description": "Stub for the checker's tests: comprehensive analyzer",
  "arguments": [
    {
      "name": "document_path",
      "type_name": "file",
      "required": true
    },
    {
      "name": "combined_context",
      "type_name": "list"
    },
    {
      "name": "processing_summary",
      "type_name": "string"
    }
  ],
  "responses": [],
  "system_event_endpoint": "builtin:echo"
}
