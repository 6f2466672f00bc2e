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
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool"
    }
  ]
}
