{"system_event_endpoint": "exec:./bin/bad_utf8.sh"}
