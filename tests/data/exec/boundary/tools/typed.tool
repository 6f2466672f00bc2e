{"arguments": [{"name": "count", "type_name": "number", "required": true},
               {"name": "note", "type_name": "string", "required": false}],
 "responses": [{"name": "label", "type_name": "string", "required": true}],
 "system_event_endpoint": "builtin:echo"}
