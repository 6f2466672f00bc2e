{
  "description": "Seed example: filter() Function",
  "instructions": [
    {
      "execution_id": "data_source",
      "tool_definition_path": "/tools/data_source.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "all_records": "REF:data_source.records"
        },
        "transforms": {
          "active_records": "filter(array=all_records, condition_string=\"item.status == 'active'\")",
          "high_priority": "filter(array=all_records, condition_string=\"item.priority > 5 and item.urgent == true\")"
        }
      }
    }
  ]
}
