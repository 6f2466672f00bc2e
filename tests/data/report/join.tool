{
  "description": "Two fan-outs joined by a transform step (SPEC §6.4 ext), which calls nothing",
  "instructions": [
    {"execution_id": "left", "tool_definition_path": "/tools/work.tool",
     "parallel_execution": {"iterate_over": [0, 0], "child_argument_name": "n"}},
    {"execution_id": "right", "tool_definition_path": "/tools/work.tool",
     "parallel_execution": {"iterate_over": [0], "child_argument_name": "n"}},
    {"execution_id": "join",
     "transform_responses": {
       "variables": {"l": "REF:left.response", "r": "REF:right.response"},
       "transforms": {"calls": "length(l) + length(r)"}}}
  ],
  "response_reference_map": {"calls": "REF:join.calls"}
}
