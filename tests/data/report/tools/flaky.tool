{
  "arguments": [{"name": "state", "type_name": "string", "required": true}],
  "responses": [{"name": "calls", "type_name": "integer", "required": true}],
  "system_event_endpoint": "exec:./bin/flaky.sh 2"
}
