{
  "description": "Seed example: map() Function",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "transforms": {
          "file_paths": "map(array=file_scan_results, template=\"item.file_path\")"
        },
        "variables": {
          "file_scan_results": "REF:arguments.file_scan_results"
        }
      }
    }
  ],
  "arguments": [
    {
      "name": "file_scan_results",
      "type_name": "any",
      "required": true
    }
  ]
}
