{
  "description": "Seed example: Use Keyword Arguments for Clarity",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "transforms": {
          "extracted_name": "get_object_property(user_data, \"profile.name\")",
          "joined_list": "join(items, \", \")"
        },
        "variables": {
          "user_data": "REF:arguments.user_data",
          "items": "REF:arguments.items"
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
      "name": "items",
      "type_name": "any",
      "required": true
    }
  ]
}
