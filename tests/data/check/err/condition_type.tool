{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}},
    {"execution_id": "big", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": "REF:scan.total"},
     "conditions": [{"param": "REF:scan.files", "operator": "greater_than", "value": 3}]}
  ]
}
