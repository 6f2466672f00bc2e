{
  "description": "Stub for the checker's tests: text processor",
  "arguments": [],
  "responses": [
    {
      "name": "cleaned_output",
      "type_name": "string",
      "required": true
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
