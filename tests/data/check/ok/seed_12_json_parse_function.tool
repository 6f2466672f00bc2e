{
  "description": "Seed example: json_parse() Function",
  "instructions": [
    {
      "execution_id": "api_call",
      "tool_definition_path": "/tools/api_call.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "raw_json": "REF:api_call.response_body"
        },
        "transforms": {
          "parsed_data": "json_parse(json_string=raw_json)",
          "user_info": "get_object_property(obj=parsed_data, property_path=\"user\")"
        }
      }
    }
  ]
}
