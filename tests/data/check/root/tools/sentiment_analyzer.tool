{
  "description": "Stub for the checker's tests: sentiment analyzer",
  "arguments": [
    {
      "name": "combined_texts",
      "type_name": "list",
      "required": true
    },
    {
      "name": "text_count",
      "type_name": "integer"
    },
    {
      "name": "text_content",
      "type_name": "any",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "score",
      "type_name": "number"
    },
    {
      "name": "label",
      "type_name": "string"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
