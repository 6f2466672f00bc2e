{
  "description": "Stub for the checker's tests: data splitter",
  "arguments": [
    {
      "name": "dataset",
      "type_name": "list",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "chunks",
      "type_name": "list",
      "required": true
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
