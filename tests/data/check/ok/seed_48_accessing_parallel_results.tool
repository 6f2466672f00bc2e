{
  "description": "Seed example: Accessing Parallel Results",
  "response_reference_map": {
    "all_results": "REF:process_files.response",
    "first_result": "REF:process_files.response.first",
    "result_count": "REF:process_files.response.length"
  },
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
  ],
  "responses": [
    {
      "name": "all_results",
      "type_name": "list",
      "required": false
    },
    {
      "name": "first_result",
      "type_name": "object",
      "required": false
    },
    {
      "name": "result_count",
      "type_name": "integer",
      "required": false
    }
  ]
}
