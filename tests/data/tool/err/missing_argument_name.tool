{
  "arguments": [
    {"type_name": "string", "required": true}
  ],
  "system_event_endpoint": "builtin:echo"
}
