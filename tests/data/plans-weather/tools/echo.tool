{
  "description": "Returns its arguments (the engine's echo builtin)",
  "system_event_endpoint": "builtin:echo"
}
