{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}},
    {"execution_id": "double", "tool_definition_path": "/tools/counter.tool",
     "transform_arguments": {"variables": {"files": "REF:scan.files"}, "transforms": {"count": "join(array=files, separator=\",\")"}}}
  ]
}
