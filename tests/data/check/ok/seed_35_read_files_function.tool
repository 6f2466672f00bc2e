{
  "description": "Seed example: read_files() Function",
  "instructions": [
    {
      "execution_id": "file_scanner",
      "tool_definition_path": "/tools/file_scanner.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "source_files": "REF:file_scanner.important_files"
        },
        "transforms": {
          "file_contents": "read_files(file_paths=source_files)"
        }
      }
    }
  ]
}
