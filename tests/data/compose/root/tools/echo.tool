{
  "description": "Answers its arguments",
  "arguments": [{"name": "text", "type_name": "any", "required": true}],
  "responses": [{"name": "text", "type_name": "any", "required": true}],
  "system_event_endpoint": "builtin:echo"
}
