{
  "arguments": [{"name": "ns", "type_name": "list<integer>", "required": true}],
  "instructions": [
    {"execution_id": "each", "tool_definition_path": "/tools/echo.tool",
     "parallel_execution": {"iterate_over": "REF:arguments.ns", "child_argument_name": "n"},
     "transform_responses": {"transforms": {"sum": "sum(array=map(array=REF:response, template=\"item.n\"))"}}}
  ],
  "response_reference_map": {"sum": "REF:each.sum"}
}
