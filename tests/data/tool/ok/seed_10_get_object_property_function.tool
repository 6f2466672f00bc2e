{
  "description": "Seed example: get_object_property() Function",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "transforms": {
          "user_name": "get_object_property(obj=user_data, property_path=\"name\")",
          "nested_value": "get_object_property(obj=api_response, property_path=\"data.items.0.title\")"
        }
      }
    }
  ]
}
