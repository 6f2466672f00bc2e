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
        },
        "variables": {
          "user_data": "REF:arguments.user_data",
          "api_response": "REF:arguments.api_response"
        }
      }
    }
  ],
  "arguments": [
    {
      "name": "user_data",
      "type_name": "any",
      "required": true
    },
    {
      "name": "api_response",
      "type_name": "any",
      "required": true
    }
  ]
}
