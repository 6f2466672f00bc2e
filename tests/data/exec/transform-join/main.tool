{
  "arguments": [{"name": "items", "type_name": "list", "required": true}],
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool",
     "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "x"}},
    {"execution_id": "b", "tool_definition_path": "/tools/b.tool",
     "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "x"}},
    {"execution_id": "join", "expected_key": "joined",
     "transform_responses": {
       "variables": {"a": "REF:a.response", "b": "REF:b.response"},
       "transforms": {"pairs": "map(array=a, template=create_object(a=item.x, b=10 * item.x))",
                      "total": "sum(array=a, item_path=\"item.x\") + sum(array=b, item_path=\"item.x\")"}}},
    {"execution_id": "after", "tool_definition_path": "/tools/a.tool", "arguments": {"total": "REF:joined.total"}}
  ],
  "response_reference_map": {"pairs": "REF:join.pairs", "total": "REF:after.total"}
}
