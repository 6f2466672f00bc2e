{
  "description": "Saved by an editor that writes a byte-order mark",
  "system_event_endpoint": "builtin:echo"
}
