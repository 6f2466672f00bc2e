{
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/open_callee.tool"},
    {"execution_id": "send", "tool_definition_path": "/tools/typed_sink.tool",
     "arguments": {"label": "report", "mode": "REF:fetch.mode"}},
    {"execution_id": "scale", "dependencies": ["send"], "tool_definition_path": "/tools/open_callee.tool",
     "transform_arguments": {"transforms": {"factor": "REF:fetch.mode * 2"}}}
  ]
}
