{
  "description": "How hard one document reads",
  "arguments": [
    {"name": "document_path", "type_name": "string", "required": true},
    {"name": "combined_context", "type_name": "list", "required": false},
    {"name": "processing_summary", "type_name": "string", "required": false}
  ],
  "responses": [
    {"name": "assessment", "type_name": "string", "required": true},
    {"name": "words_per_sentence", "type_name": "integer", "required": true}
  ],
  "system_event_endpoint": "exec:./bin/comprehensive.sh"
}
