{
  "description": "a trailing comma",
  "system_event_endpoint": "builtin:echo",
}
