{"instructions": [
  {"execution_id": "lists", "tool_definition_path": "/tools/lists.tool", "arguments": {"kind": "list"},
   "parallel_execution": {"iterate_over": [1, 2, 3], "child_argument_name": "n"},
   "transform_responses": {"transforms": {"flat": "flatten(REF:response)"}}},
  {"execution_id": "numbers", "tool_definition_path": "/tools/numbers.tool", "arguments": {"kind": "number"},
   "parallel_execution": {"iterate_over": [1, 2, 3], "child_argument_name": "n"},
   "transform_responses": {"transforms": {"total": "sum(REF:response)"}}},
  {"execution_id": "after", "tool_definition_path": "/tools/t.tool",
   "arguments": {"flat": "REF:lists.response", "first": "REF:numbers.response.0"}}
],
"response_reference_map": {"flat": "REF:lists.flat", "total": "REF:numbers.total",
                           "raw": "REF:numbers.response", "first": "REF:after.first"}}
