{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}},
    {"execution_id": "count", "tool_definition_path": "/tools/counter.tool",
     "transform_arguments": {"transforms": {"count": "length(json_parse(REF:scan.files))"}}}
  ]
}
