{
  "description": "Seed example: File References",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "arguments": {
        "file_content": "REF:file_processor.output_file",
        "file_path": "REF:file_processor.output_file.path",
        "file_name": "REF:file_processor.output_file.file_name",
        "parent_dir": "REF:file_processor.output_file.parent_directory"
      }
    }
  ]
}
