{
  "arguments": [
    {"name": "code", "type_name": "string", "pattern": "([a-z]+", "min_length": -1},
    {"name": "level", "type_name": "number", "minimum": 10, "maximum": 1},
    {"name": "mode", "type_name": "string", "enum": []}
  ],
  "system_event_endpoint": "builtin:echo"
}
