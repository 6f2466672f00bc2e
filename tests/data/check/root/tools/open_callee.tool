{
  "description": "Declares neither arguments nor responses: takes any argument, returns anything (SPEC §5)",
  "system_event_endpoint": "builtin:echo"
}
