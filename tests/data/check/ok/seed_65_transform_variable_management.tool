{
  "description": "Seed example: Transform Variable Management",
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
          "source_records": "REF:data_source.records",
          "filter_criteria": "REF:arguments.filter",
          "processing_mode": "batch"
        },
        "transforms": {
          "filtered_data": "map(array=source_records, template=\"item.data\")",
          "batch_size": "REF:data_source.records.length"
        }
      }
    }
  ],
  "arguments": [
    {
      "name": "filter",
      "type_name": "any",
      "required": true
    }
  ]
}
