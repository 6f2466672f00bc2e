{
  "description": "Seed example: File References",
  "arguments": [
    {
      "name": "source_file",
      "type_name": "file",
      "required": true
    }
  ],
  "instructions": [
    {
      "execution_id": "file_processor",
      "tool_definition_path": "/tools/file_processor.tool",
      "arguments": {
        "input_file": "REF:arguments.source_file"
      }
    },
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
