{
  "description": "One issue of a tracker (a callee whose responses declare an enum: E0207, W0103)",
  "arguments": [
    {"name": "id", "type_name": "string", "required": true},
    {"name": "state", "type_name": "string", "enum": ["open", "closed", "all"]}
  ],
  "responses": [
    {"name": "state", "type_name": "string", "enum": ["open", "closed"], "required": true},
    {"name": "title", "type_name": "string", "required": true},
    {"name": "assignee", "type_name": "string"}
  ],
  "system_event_endpoint": "builtin:echo"
}
