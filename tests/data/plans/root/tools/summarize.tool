{
  "description": "Summarizes a text in a few words",
  "arguments": [
    {"name": "text", "type_name": "string", "required": true},
    {"name": "max_words", "type_name": "integer", "required": false}
  ],
  "responses": [
    {"name": "summary", "type_name": "string", "required": true}
  ],
  "system_event_endpoint": "exec:./bin/summarize.sh"
}
