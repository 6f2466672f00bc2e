{
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/open_callee.tool"},
    {"execution_id": "send", "tool_definition_path": "/tools/typed_sink.tool",
     "arguments": {"label": "REF:fetch.title", "mode": "fast"}},
    {"execution_id": "words", "dependencies": ["send"], "tool_definition_path": "/tools/open_callee.tool",
     "transform_arguments": {"transforms": {"words": "map(array=REF:fetch.title, template=\"item\")"}}}
  ]
}
