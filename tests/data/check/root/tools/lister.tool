{
  "description": "Lists a directory (a callee for the checker's error cases)",
  "arguments": [
    {"name": "directory", "type_name": "string", "required": true},
    {"name": "pattern", "type_name": "string"}
  ],
  "responses": [
    {"name": "files", "type_name": "list<string>", "required": true},
    {"name": "total", "type_name": "integer", "required": true}
  ],
  "system_event_endpoint": "builtin:echo"
}
