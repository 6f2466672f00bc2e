{"system_event_endpoint": "exec:./bin/echo.sh"}
