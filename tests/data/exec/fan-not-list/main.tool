{"instructions": [
  {"execution_id": "count", "tool_definition_path": "/tools/t.tool"},
  {"execution_id": "fan", "tool_definition_path": "/tools/t.tool",
   "parallel_execution": {"iterate_over": "REF:count.n", "child_argument_name": "item"}}]}
