{
  "description": "Doubles a count (a callee for the checker's error cases)",
  "arguments": [
    {"name": "count", "type_name": "integer", "required": true}
  ],
  "responses": [
    {"name": "doubled", "type_name": "integer", "required": true}
  ],
  "system_event_endpoint": "builtin:echo"
}
