{
  "arguments": [{"name": "n", "type_name": "integer", "required": true}],
  "responses": [{"name": "n", "type_name": "integer", "required": true}],
  "system_event_endpoint": "builtin:echo"
}
