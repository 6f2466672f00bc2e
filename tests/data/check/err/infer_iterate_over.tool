{
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/open_callee.tool"},
    {"execution_id": "each", "tool_definition_path": "/tools/open_callee.tool",
     "parallel_execution": {"iterate_over": "REF:fetch.pages", "child_argument_name": "page"}},
    {"execution_id": "count", "dependencies": ["each"], "tool_definition_path": "/tools/open_callee.tool",
     "transform_arguments": {"transforms": {"last_index": "REF:fetch.pages - 1"}}}
  ]
}
