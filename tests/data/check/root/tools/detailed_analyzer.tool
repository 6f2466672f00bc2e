{
  "description": "Stub for the checker's tests: detailed analyzer",
  "arguments": [
    {
      "name": "document_path",
      "type_name": "file",
      "required": true
    },
    {
      "name": "context_data",
      "type_name": "list"
    },
    {
      "name": "analysis_mode",
      "type_name": "string"
    }
  ],
  "responses": [
    {
      "name": "insights",
      "type_name": "list"
    },
    {
      "name": "metadata",
      "type_name": "object"
    },
    {
      "name": "key_findings",
      "type_name": "string"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
