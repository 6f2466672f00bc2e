{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}},
    {"execution_id": "each", "tool_definition_path": "/tools/counter.tool",
     "parallel_execution": {"iterate_over": "REF:scan.files", "child_argument_name": "count"}}
  ]
}
