{
  "description": "Seed example: Transform Error Handling",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "transforms": {
          "required_field": "invalid_function(data)"
        }
      }
    }
  ]
}
