{
  "description": "Deletes every record (not for plans: outside --allow)",
  "arguments": [],
  "responses": [],
  "system_event_endpoint": "builtin:echo"
}
