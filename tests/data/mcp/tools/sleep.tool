{
  "description": "Sleeps, after writing its process ids to a file",
  "arguments": [
    {"name": "pid_file", "type_name": "string", "description": "Where to write \"<pid> <sleep's pid>\"", "required": true},
    {"name": "seconds", "type_name": "number", "description": "How long to sleep", "required": true}
  ],
  "responses": [
    {"name": "slept", "type_name": "number", "required": true}
  ],
  "system_event_endpoint": "exec:./bin/sleep.sh"
}
