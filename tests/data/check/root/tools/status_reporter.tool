{
  "description": "Reports a numeric status and a count (a callee for continue_on_error's failure shape)",
  "arguments": [
    {"name": "job", "type_name": "string", "required": true}
  ],
  "responses": [
    {"name": "status", "type_name": "integer", "required": true},
    {"name": "count", "type_name": "integer", "required": true}
  ],
  "system_event_endpoint": "builtin:echo"
}
