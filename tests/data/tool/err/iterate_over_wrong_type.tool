{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool",
     "parallel_execution": {"iterate_over": 3, "child_argument_name": "item"}}
  ]
}
