{
  "description": "Takes five seconds, then answers {\"done\": true}",
  "arguments": [],
  "responses": [{"name": "done", "type_name": "boolean", "required": true}],
  "system_event_endpoint": "exec:sh -c 'sleep 5; echo {\"done\":true}'"
}
