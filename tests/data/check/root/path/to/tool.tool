{
  "description": "Stub for the checker's tests: tool",
  "arguments": [
    {
      "name": "param",
      "type_name": "any"
    }
  ],
  "responses": [
    {
      "name": "result",
      "type_name": "any"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
