{
  "description": "no comma after me"
  "system_event_endpoint": "builtin:echo"
}
