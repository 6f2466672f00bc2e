{"system_event_endpoint": "exec:./bin/flood_out.sh"}
