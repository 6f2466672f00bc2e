{
  "description": "Upper-cases a word (a Python function in the tests).",
  "arguments": [{"name": "word", "type_name": "string", "required": true}],
  "responses": [{"name": "word", "type_name": "string", "required": true}],
  "system_event_endpoint": "python:up"
}
