{
  "description": "Stub for the checker's tests: data processor",
  "arguments": [
    {
      "name": "user_name",
      "type_name": "string"
    },
    {
      "name": "raw_data",
      "type_name": "any"
    },
    {
      "name": "processed_data",
      "type_name": "list"
    },
    {
      "name": "processing_mode",
      "type_name": "string"
    },
    {
      "name": "batch_size",
      "type_name": "integer"
    }
  ],
  "responses": [
    {
      "name": "processed_items",
      "type_name": "list"
    },
    {
      "name": "cleaned_data",
      "type_name": "object"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
