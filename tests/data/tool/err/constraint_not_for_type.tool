{
  "arguments": [
    {"name": "count", "type_name": "integer", "pattern": "^[0-9]+$"},
    {"name": "label", "type_name": "string", "minimum": 1, "items": "string"}
  ],
  "system_event_endpoint": "builtin:echo"
}
