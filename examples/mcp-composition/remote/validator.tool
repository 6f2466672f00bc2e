{
  "description": "The document-analysis validator, called over MCP",
  "arguments": [
    {"name": "file_paths", "type_name": "list<string>", "description": "Documents to check", "required": true}
  ],
  "responses": [
    {"name": "valid_documents", "type_name": "list<string>", "description": "The readable ones", "required": true},
    {"name": "validation_results", "type_name": "list", "description": "One {path, is_valid, error_message} per document", "required": true}
  ],
  "system_event_endpoint": "mcp:../serve.sh#document_validator"
}
