{
  "description": "Takes ten seconds and answers nothing (for the deadline test)",
  "arguments": [],
  "responses": [],
  "system_event_endpoint": "exec:sleep 10"
}
