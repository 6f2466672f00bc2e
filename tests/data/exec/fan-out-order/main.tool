{
  "arguments": [{"name": "items", "type_name": "list<integer>", "required": true}],
  "instructions": [
    {"execution_id": "each", "tool_definition_path": "/tools/echo.tool",
     "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "n"},
     "transform_responses": {"transforms": {"total": "sum(array=map(array=REF:response, template=\"item.n\"))"}}},
    {"execution_id": "after", "tool_definition_path": "/tools/echo.tool",
     "arguments": {"n": "REF:each.total"}}
  ],
  "response_reference_map": {"ns": "REF:each.response", "total": "REF:after.n"}
}
