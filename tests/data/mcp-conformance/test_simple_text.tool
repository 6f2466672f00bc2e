{
  "description": "conformance scenario tools-call-simple-text: returns a string",
  "system_event_endpoint": "exec:./bin/simple_text.sh"
}
