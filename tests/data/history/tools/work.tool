{
  "description": "Sleeps `n` seconds, then answers {\"n\": n}",
  "arguments": [{"name": "n", "type_name": "integer", "required": true}],
  "responses": [{"name": "n", "type_name": "integer", "required": true}],
  "system_event_endpoint": "exec:./bin/work.sh"
}
