{
  "description": "Seed example: describe_version() Function",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "file_path": "REF:arguments.document_path",
          "version": "REF:arguments.version_id"
        },
        "transforms": {
          "file_metadata": "describe_version(file_path=file_path)",
          "specific_version": "describe_version(file_path=file_path, version_id=version)"
        }
      }
    }
  ],
  "arguments": [
    {
      "name": "document_path",
      "type_name": "any",
      "required": true
    },
    {
      "name": "version_id",
      "type_name": "any",
      "required": true
    }
  ]
}
