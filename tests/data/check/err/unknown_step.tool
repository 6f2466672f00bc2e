{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}},
    {"execution_id": "count", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": "REF:sacn.total"}}
  ]
}
