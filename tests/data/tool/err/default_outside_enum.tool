{
  "arguments": [
    {"name": "direction", "type_name": "string", "enum": ["higher", "lower", "target"], "default": "up"}
  ],
  "system_event_endpoint": "builtin:echo"
}
