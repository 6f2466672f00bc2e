{
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/open_callee.tool",
     "transform_responses": {"transforms": {"next_page": "page - 1"}}},
    {"execution_id": "total", "tool_definition_path": "/tools/open_callee.tool",
     "transform_arguments": {"transforms": {"sum": "REF:fetch.page * 2"}}}
  ]
}
