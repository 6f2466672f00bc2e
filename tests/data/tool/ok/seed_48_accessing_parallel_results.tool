{
  "description": "Seed example: Accessing Parallel Results",
  "response_reference_map": {
    "all_results": "REF:process_files.response",
    "first_result": "REF:process_files.response.first",
    "result_count": "REF:process_files.response.length"
  },
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool"
    }
  ],
  "responses": [
    {
      "name": "all_results",
      "type_name": "any",
      "required": false
    },
    {
      "name": "first_result",
      "type_name": "any",
      "required": false
    },
    {
      "name": "result_count",
      "type_name": "any",
      "required": false
    }
  ]
}
