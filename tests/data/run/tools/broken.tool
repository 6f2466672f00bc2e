{"system_event_endpoint": "exec:'./bin/broken.sh'"}
