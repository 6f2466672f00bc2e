{
  "description": "Sends an email",
  "arguments": [
    {"name": "to", "type_name": "string", "required": true},
    {"name": "subject", "type_name": "string", "required": true},
    {"name": "body", "type_name": "string", "required": true},
    {"name": "urgent", "type_name": "boolean", "required": false}
  ],
  "responses": [
    {"name": "sent", "type_name": "boolean", "required": true},
    {"name": "message_id", "type_name": "string", "required": true}
  ],
  "system_event_endpoint": "exec:./bin/send.sh"
}
