{
  "instructions": [
    {"execution_id": "each", "tool_definition_path": "/tools/counter.tool",
     "parallel_execution": {"iterate_over": [1, 2, 3], "child_argument_name": "count"}},
    {"execution_id": "sum", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": "REF:each.doubled"}}
  ]
}
