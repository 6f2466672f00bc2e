{
  "description": "Counts the letters of a text.",
  "arguments": [{"name": "text", "type_name": "string", "required": true}],
  "responses": [{"name": "letters", "type_name": "integer", "required": true}],
  "system_event_endpoint": "python:count"
}
