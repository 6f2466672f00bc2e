{
  "description": "Fetches one page: its text",
  "arguments": [
    {"name": "url", "type_name": "string", "required": true}
  ],
  "responses": [
    {"name": "url", "type_name": "string", "required": true},
    {"name": "text", "type_name": "string", "required": true},
    {"name": "word_count", "type_name": "integer", "required": true}
  ],
  "system_event_endpoint": "exec:./bin/fetch.sh"
}
