{"system_event_endpoint": "exec:./bin/hang.sh"}
