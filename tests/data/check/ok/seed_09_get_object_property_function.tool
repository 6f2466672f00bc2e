{
  "description": "Seed example: get_object_property() Function",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "transforms": {
          "user_name": "get_object_property(user_data, \"name\")",
          "user_email": "get_object_property(user_data, \"profile.email\")"
        },
        "variables": {
          "user_data": "REF:arguments.user_data"
        }
      }
    }
  ],
  "arguments": [
    {
      "name": "user_data",
      "type_name": "any",
      "required": true
    }
  ]
}
