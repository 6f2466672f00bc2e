{"system_event_endpoint": "exec:./bin/flood_err.sh"}
