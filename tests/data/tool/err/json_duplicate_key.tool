{
  "description": "first",
  "description": "second",
  "system_event_endpoint": "builtin:echo"
}
