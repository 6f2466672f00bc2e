{
  "execution_id": "main",
  "system_event_endpoint": "builtin:echo"
}
