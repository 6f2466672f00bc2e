{
  "description": "conformance scenario tools-call-error: always fails",
  "system_event_endpoint": "exec:./bin/error.sh"
}
