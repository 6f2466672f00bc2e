{
  "description": "Stub for the checker's tests: process data",
  "arguments": [],
  "responses": [],
  "system_event_endpoint": "builtin:echo"
}
