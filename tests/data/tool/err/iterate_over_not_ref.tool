{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool",
     "parallel_execution": {"iterate_over": "arguments.items", "child_argument_name": "item"}}
  ]
}
