{
  "description": "Checks that a document id is well formed and that the document exists",
  "arguments": [
    {
      "name": "document_id",
      "type_name": "string",
      "description": "The document's id",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "id",
      "type_name": "string",
      "required": true
    },
    {
      "name": "is_valid",
      "type_name": "boolean",
      "required": true
    },
    {
      "name": "error",
      "type_name": "string",
      "description": "Why it is not valid; null when it is",
      "required": false
    }
  ],
  "system_event_endpoint": "exec:./bin/tool.py validate_document"
}
