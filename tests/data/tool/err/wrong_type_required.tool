{
  "arguments": [
    {"name": "path", "type_name": "string", "required": "yes"}
  ],
  "system_event_endpoint": "builtin:echo"
}
