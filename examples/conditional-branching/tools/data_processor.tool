{
  "description": "Processes clean records in batches",
  "arguments": [
    {"name": "processing_mode", "type_name": "string", "required": true},
    {"name": "batch_size", "type_name": "integer", "required": true},
    {"name": "processed_data", "type_name": "list", "required": true}
  ],
  "responses": [
    {"name": "status", "type_name": "string", "required": true},
    {"name": "processed", "type_name": "integer", "required": true},
    {"name": "mode", "type_name": "string", "required": true}
  ],
  "system_event_endpoint": "exec:./bin/process.sh"
}
