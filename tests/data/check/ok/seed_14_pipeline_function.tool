{
  "description": "Seed example: pipeline() Function",
  "instructions": [
    {
      "execution_id": "data_fetch",
      "tool_definition_path": "/tools/data_fetch.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "api_data": "REF:data_fetch.response",
          "filter_criteria": "active",
          "separator": ", "
        },
        "transforms": {
          "processed_summary": "pipeline(api_data, [json_parse(json_string=current), get_object_property(obj=current, property_path=\"users\"), map(array=current, template=\"item.name\"), join(array=current, separator=separator)])"
        }
      }
    }
  ]
}
