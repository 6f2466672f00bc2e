{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/docs"}},
    {"execution_id": "report", "tool_definition_path": "/tools/counter.tool",
     "conditions": [{"param": "REF:scan.status", "operator": "equals", "value": "failed"}],
     "arguments": {"count": 1}}
  ]
}
