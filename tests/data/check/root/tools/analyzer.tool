{
  "description": "Stub for the checker's tests: analyzer",
  "arguments": [
    {
      "name": "data_chunk",
      "type_name": "any",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "success_flag",
      "type_name": "object"
    },
    {
      "name": "metric_value",
      "type_name": "number"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
