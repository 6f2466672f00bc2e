{
  "description": "Stub for the checker's tests: validator",
  "arguments": [
    {
      "name": "data",
      "type_name": "any",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "is_valid",
      "type_name": "boolean",
      "required": true
    },
    {
      "name": "clean_records",
      "type_name": "list"
    },
    {
      "name": "validation_errors",
      "type_name": "list"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
