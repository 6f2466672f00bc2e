{"responses": [{"name": "summary", "type_name": "string", "required": true},
               {"name": "text", "type_name": "string", "required": false}],
 "system_event_endpoint": "builtin:echo"}
