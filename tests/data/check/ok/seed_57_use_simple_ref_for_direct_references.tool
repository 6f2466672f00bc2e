{
  "description": "Seed example: Use Simple REF for Direct References",
  "instructions": [
    {
      "execution_id": "scanner",
      "tool_definition_path": "/tools/scanner.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "file_list": "REF:scanner.files",
          "metadata": "REF:scanner.metadata"
        },
        "transforms": {
          "file_summary": "join(array=file_list, separator=', ')",
          "total_files": "REF:scanner.files.length"
        }
      }
    }
  ]
}
