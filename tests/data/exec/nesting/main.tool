{"instructions": [
  {"execution_id": "outer", "tool_definition_path": "/tools/inner.tool", "arguments": {"x": 21}},
  {"execution_id": "each", "tool_definition_path": "/tools/inner.tool",
   "parallel_execution": {"iterate_over": [1, 2], "child_argument_name": "x"}}
],
"response_reference_map": {"answer": "REF:outer.value", "each": "REF:each.response"}}
