{
  "description": "Seed example: list_file_versions() Function",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "target_file": "REF:arguments.file_path"
        },
        "transforms": {
          "file_history": "list_file_versions(file_path=target_file)"
        }
      }
    }
  ],
  "arguments": [
    {
      "name": "file_path",
      "type_name": "any",
      "required": true
    }
  ]
}
