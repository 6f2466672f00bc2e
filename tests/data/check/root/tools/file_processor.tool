{
  "description": "Stub for the checker's tests: file processor",
  "arguments": [
    {
      "name": "input_file",
      "type_name": "file",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "output_file",
      "type_name": "file",
      "required": true
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
