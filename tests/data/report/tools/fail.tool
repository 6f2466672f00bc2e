{"description": "Always fails (exit status 1)", "system_event_endpoint": "exec:./bin/fail.sh"}
