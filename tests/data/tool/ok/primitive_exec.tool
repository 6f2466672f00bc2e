{
  "description": "Counts the words of a text by running a program",
  "arguments": [
    {"name": "text", "type_name": "string", "description": "The text to count", "required": true}
  ],
  "responses": [
    {"name": "count", "type_name": "integer", "description": "Number of words", "required": true}
  ],
  "system_event_endpoint": "exec:./bin/wc-words --json"
}
