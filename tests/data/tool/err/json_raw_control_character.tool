{
  "description": "a raw	tab",
  "system_event_endpoint": "builtin:echo"
}
