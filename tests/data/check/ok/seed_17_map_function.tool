{
  "description": "Seed example: map() Function",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "transforms": {
          "extracted_names": "map(array=users, template=\"item.name\")",
          "structured_data": "map(array=raw_records, template={id: item.user_id, status: item.active})"
        },
        "variables": {
          "users": "REF:arguments.users",
          "raw_records": "REF:arguments.raw_records"
        }
      }
    }
  ],
  "arguments": [
    {
      "name": "users",
      "type_name": "any",
      "required": true
    },
    {
      "name": "raw_records",
      "type_name": "any",
      "required": true
    }
  ]
}
