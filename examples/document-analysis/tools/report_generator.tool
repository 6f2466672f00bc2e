{
  "description": "Writes the report to a file",
  "arguments": [
    {"name": "report_path", "type_name": "string", "required": true},
    {"name": "report_text", "type_name": "string", "required": true},
    {"name": "executive_summary", "type_name": "string", "description": "The files, one line each", "required": false},
    {"name": "document_count", "type_name": "integer", "required": true}
  ],
  "responses": [
    {"name": "report_file", "type_name": "file", "required": true},
    {"name": "lines", "type_name": "integer", "required": true}
  ],
  "system_event_endpoint": "exec:./bin/report.sh"
}
