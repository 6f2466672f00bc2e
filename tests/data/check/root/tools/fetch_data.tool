{
  "description": "Stub for the checker's tests: fetch data",
  "arguments": [],
  "responses": [],
  "system_event_endpoint": "builtin:echo"
}
