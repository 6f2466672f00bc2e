{"instructions": [
  {"execution_id": "primary", "tool_definition_path": "/tools/broken.tool", "arguments": {"fail": true},
   "continue_on_error": true},
  {"execution_id": "recover", "tool_definition_path": "/tools/t.tool",
   "conditions": [{"param": "REF:primary.status", "operator": "equals", "value": "failed"}],
   "arguments": {"why": "REF:primary.error_message"}},
  {"execution_id": "fan", "tool_definition_path": "/tools/fan.tool", "continue_on_error": true,
   "parallel_execution": {"iterate_over": [true, false], "child_argument_name": "fail"}}
],
"response_reference_map": {"why": "REF:recover.why", "fan": "REF:fan.response"}}
