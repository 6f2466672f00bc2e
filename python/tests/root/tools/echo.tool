{
  "description": "Returns its argument.",
  "arguments": [{"name": "value", "type_name": "any", "required": true}],
  "responses": [{"name": "value", "type_name": "any", "required": false}],
  "system_event_endpoint": "builtin:echo"
}
