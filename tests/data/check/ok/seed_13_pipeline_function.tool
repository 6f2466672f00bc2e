{
  "description": "Seed example: pipeline() Function",
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
          "json_string": "REF:api_response.body",
          "property_path": "user.profile.name"
        },
        "transforms": {
          "extracted_name": "pipeline(json_string, [json_parse(json_string=current), get_object_property(obj=current, property_path=property_path)])"
        }
      }
    }
  ]
}
