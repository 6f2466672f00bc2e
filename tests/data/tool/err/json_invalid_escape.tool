{
  "description": "bad \q escape",
  "system_event_endpoint": "builtin:echo"
}
