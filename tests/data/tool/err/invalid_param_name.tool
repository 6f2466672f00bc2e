{
  "arguments": [
    {"name": "file.path", "type_name": "string"}
  ],
  "system_event_endpoint": "builtin:echo"
}
