{"arguments": [{"name": "x", "type_name": "number", "required": true}],
 "responses": [{"name": "value", "type_name": "number", "required": true}],
 "system_event_endpoint": "builtin:echo"}
