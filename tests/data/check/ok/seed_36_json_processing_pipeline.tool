{
  "description": "Seed example: JSON Processing Pipeline",
  "instructions": [
    {
      "execution_id": "api_call",
      "tool_definition_path": "/tools/api_call.tool"
    },
    {
      "execution_id": "process_api_response",
      "tool_definition_path": "/tools/data_processor.tool",
      "transform_arguments": {
        "variables": {
          "raw_response": "REF:api_call.response_body",
          "user_path": "data.user",
          "name_path": "profile.display_name"
        },
        "transforms": {
          "user_name": "pipeline(raw_response, [json_parse(json_string=current), get_object_property(obj=current, property_path=user_path), get_object_property(obj=current, property_path=name_path)])"
        }
      }
    }
  ]
}
