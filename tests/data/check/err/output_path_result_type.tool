{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/docs"},
     "expected_key": "listing", "output_path": ["files", 0]},
    {"execution_id": "count", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": "REF:listing"}}
  ]
}
