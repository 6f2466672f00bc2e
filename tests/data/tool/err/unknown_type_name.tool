{
  "arguments": [
    {"name": "path", "type_name": "strng"}
  ],
  "system_event_endpoint": "builtin:echo"
}
