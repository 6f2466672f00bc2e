{
  "description": "Seed example: Declare Path Variables for Reusability",
  "instructions": [
    {
      "execution_id": "api_response",
      "tool_definition_path": "/tools/api_response.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "json_data": "REF:api_response.body",
          "user_path": "data.user.profile",
          "name_field": "display_name"
        },
        "transforms": {
          "user_name": "pipeline(json_data, [json_parse(json_string=current), get_object_property(obj=current, property_path=user_path), get_object_property(obj=current, property_path=name_field)])"
        }
      }
    }
  ]
}
