{"instructions": [{"execution_id": "fan", "tool_definition_path": "/tools/t.tool",
  "parallel_execution": {"iterate_over": [0, 1, 2, 3, 4, 5], "child_argument_name": "i"}},
 {"execution_id": "after", "tool_definition_path": "/tools/t.tool", "arguments": {"i": "REF:fan.response"}}]}
