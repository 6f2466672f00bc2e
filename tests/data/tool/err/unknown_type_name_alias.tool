{
  "arguments": [
    {"name": "paths", "type_name": "array<str>"}
  ],
  "system_event_endpoint": "builtin:echo"
}
