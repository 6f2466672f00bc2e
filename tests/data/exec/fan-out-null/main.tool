{"instructions": [
  {"execution_id": "maybe", "tool_definition_path": "/tools/t.tool",
   "conditions": [{"param": 1, "operator": "equals", "value": 2}], "arguments": {"xs": [1]}},
  {"execution_id": "fan", "tool_definition_path": "/tools/t.tool",
   "parallel_execution": {"iterate_over": "REF:maybe.xs", "child_argument_name": "x"}}
]}
