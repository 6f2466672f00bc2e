{
  "description": "Always fails",
  "system_event_endpoint": "exec:./bin/fail.sh"
}
