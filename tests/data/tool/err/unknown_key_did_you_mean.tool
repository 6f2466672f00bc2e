{
  "descripton": "a typo",
  "system_event_endpoint": "builtin:echo"
}
