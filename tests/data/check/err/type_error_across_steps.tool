{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"},
     "transform_responses": {"transforms": {"listing": "join(array=files, separator=\", \")"}}},
    {"execution_id": "count", "tool_definition_path": "/tools/counter.tool",
     "transform_arguments": {"transforms": {"count": "sum(array=REF:scan.listing)"}}}
  ]
}
