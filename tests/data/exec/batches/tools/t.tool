{"system_event_endpoint": "builtin:echo"}
