{
  "description": "Seed example: Basic Parallel Execution",
  "instructions": [
    {
      "execution_id": "file_scanner",
      "tool_definition_path": "/tools/file_scanner.tool"
    },
    {
      "execution_id": "process_files",
      "tool_definition_path": "/tools/file_processor.tool",
      "parallel_execution": {
        "iterate_over": "REF:file_scanner.file_list",
        "child_argument_name": "input_file"
      }
    }
  ]
}
