{
  "description": "Stub for the checker's tests: parallel processor",
  "arguments": [
    {
      "name": "item",
      "type_name": "any",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "ok",
      "type_name": "boolean"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
