{
  "description": "never closed",
  "system_event_endpoint": "builtin:echo"
