{
  "arguments": [{"name": "groups", "type_name": "list<list<integer>>", "required": true}],
  "instructions": [
    {"execution_id": "each", "tool_definition_path": "/group.tool",
     "parallel_execution": {"iterate_over": "REF:arguments.groups", "child_argument_name": "ns"}}
  ],
  "response_reference_map": {"groups": "REF:each.response"}
}
