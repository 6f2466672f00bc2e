{"system_event_endpoint": "builtin:echo"}
{"system_event_endpoint": "builtin:echo"}
