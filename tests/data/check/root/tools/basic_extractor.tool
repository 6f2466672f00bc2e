{
  "description": "Stub for the checker's tests: basic extractor",
  "arguments": [
    {
      "name": "document_path",
      "type_name": "file",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "page_count",
      "type_name": "integer"
    },
    {
      "name": "filename",
      "type_name": "string"
    },
    {
      "name": "summary",
      "type_name": "string"
    },
    {
      "name": "status",
      "type_name": "string"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
