{
  "description": "Seed example: read_file() Function",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "config_path": "REF:arguments.config_file"
        },
        "transforms": {
          "config_content": "read_file(file_path=config_path)",
          "previous_version": "read_file(file_path=config_path, version_id=\"v1.2\")"
        }
      }
    }
  ],
  "arguments": [
    {
      "name": "config_file",
      "type_name": "any",
      "required": true
    }
  ]
}
