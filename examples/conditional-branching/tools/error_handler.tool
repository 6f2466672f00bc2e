{
  "description": "Reports invalid input",
  "arguments": [
    {"name": "error_count", "type_name": "integer", "required": true},
    {"name": "error_summary", "type_name": "string", "required": true}
  ],
  "responses": [
    {"name": "status", "type_name": "string", "required": true},
    {"name": "message", "type_name": "string", "required": true}
  ],
  "system_event_endpoint": "exec:./bin/report_errors.sh"
}
