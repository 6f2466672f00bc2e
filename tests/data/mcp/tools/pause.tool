{
  "description": "Adds one to n, after a pause of 0.3 s",
  "arguments": [
    {"name": "n", "type_name": "integer", "required": true}
  ],
  "responses": [
    {"name": "n", "type_name": "integer", "required": true}
  ],
  "system_event_endpoint": "exec:./bin/pause.sh"
}
