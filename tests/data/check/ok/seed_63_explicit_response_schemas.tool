{
  "description": "Seed example: Explicit Response Schemas",
  "responses": [
    {
      "name": "user_id",
      "type_name": "string",
      "description": "Unique identifier for the user",
      "required": true
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
