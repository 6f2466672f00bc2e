{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool",
     "parallel_execution": {"iterate_over": "REF:arguments.items"}}
  ]
}
