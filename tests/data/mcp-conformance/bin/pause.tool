{
  "description": "Pauses 50 ms",
  "system_event_endpoint": "exec:./pause.sh"
}
