{
  "description": "Stub for the checker's tests: report generator",
  "arguments": [
    {
      "name": "processed_data",
      "type_name": "object"
    },
    {
      "name": "metadata",
      "type_name": "object"
    },
    {
      "name": "executive_summary",
      "type_name": "string"
    },
    {
      "name": "document_stats",
      "type_name": "list"
    },
    {
      "name": "document_count",
      "type_name": "integer"
    }
  ],
  "responses": [
    {
      "name": "report_file",
      "type_name": "file",
      "required": true
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
