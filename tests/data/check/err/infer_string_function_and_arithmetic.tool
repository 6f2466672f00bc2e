{
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/open_callee.tool"},
    {"execution_id": "shape", "tool_definition_path": "/tools/open_callee.tool",
     "transform_arguments": {"transforms": {"loud": "upper(REF:fetch.name)", "twice": "REF:fetch.name * 2"}}}
  ]
}
