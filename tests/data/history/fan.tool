{
  "arguments": [{"name": "items", "type_name": "list<integer>", "required": true}],
  "instructions": [
    {"execution_id": "fan", "tool_definition_path": "/tools/work.tool",
     "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "n"}}
  ],
  "response_reference_map": {"results": "REF:fan.response"}
}
