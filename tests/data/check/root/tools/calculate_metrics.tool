{
  "description": "Stub for the checker's tests: calculate metrics",
  "arguments": [],
  "responses": [
    {
      "name": "success_percentage",
      "type_name": "number",
      "required": true
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
