{"arguments": [{"name": "dir", "type_name": "string", "required": true}], "system_event_endpoint": "exec:./bin/slow.sh"}
