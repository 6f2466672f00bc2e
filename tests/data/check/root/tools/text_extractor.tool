{
  "description": "Stub for the checker's tests: text extractor",
  "arguments": [
    {
      "name": "document_path",
      "type_name": "file",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "content",
      "type_name": "string"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
