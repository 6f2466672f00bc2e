{
  "description": "The most frequent words and sentence count of one document",
  "arguments": [
    {"name": "document_path", "type_name": "string", "required": true},
    {"name": "analysis_mode", "type_name": "string", "required": true},
    {"name": "context_data", "type_name": "list", "description": "What the basic extraction found", "required": false}
  ],
  "responses": [
    {"name": "insights", "type_name": "string", "required": true},
    {"name": "key_findings", "type_name": "string", "required": true},
    {"name": "metadata", "type_name": "object", "required": true}
  ],
  "system_event_endpoint": "exec:./bin/analyze.sh"
}
