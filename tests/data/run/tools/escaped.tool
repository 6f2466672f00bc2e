{"system_event_endpoint": "exec:./bin/escaped.sh"}
