{
  "arguments": [
    {"name": "path", "type_name": "string", "required": "true"}
  ],
  "system_event_endpoint": "builtin:echo"
}
