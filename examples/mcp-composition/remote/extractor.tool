{
  "description": "The document-analysis extractor, called over MCP",
  "arguments": [
    {"name": "document_path", "type_name": "string", "description": "The document", "required": true}
  ],
  "responses": [
    {"name": "filename", "type_name": "string", "required": true},
    {"name": "page_count", "type_name": "integer", "required": true},
    {"name": "word_count", "type_name": "integer", "required": true},
    {"name": "status", "type_name": "string", "required": true},
    {"name": "summary", "type_name": "string", "required": true}
  ],
  "system_event_endpoint": "mcp:../serve.sh#basic_extractor"
}
