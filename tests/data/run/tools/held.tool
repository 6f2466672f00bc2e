{"system_event_endpoint": "exec:./bin/held.sh"}
