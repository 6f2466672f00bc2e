{
  "description": "Fails with a red, ringing message on standard error (ESC [31m, BEL)",
  "system_event_endpoint": "exec:./bin/ansi.sh"
}
