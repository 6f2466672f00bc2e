{
  "arguments": [
    {"name": "level", "type_name": "integer", "enum": [1, 2, "three"]},
    {"name": "tags", "type_name": "list<string>", "items": {"type_name": "integer"}}
  ],
  "system_event_endpoint": "builtin:echo"
}
