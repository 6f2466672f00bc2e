{
  "arguments": [
    {"name": "path", "type_name": "string"},
    {"name": "path", "type_name": "file"}
  ],
  "system_event_endpoint": "builtin:echo"
}
