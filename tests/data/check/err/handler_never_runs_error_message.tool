{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/docs"}},
    {"execution_id": "report", "tool_definition_path": "/tools/counter.tool",
     "conditions": [{"logic": "OR", "conditions": [
       {"param": "REF:scan.error_message", "operator": "exists"},
       {"param": "failed", "operator": "equals", "value": "REF:scan.status"}]}],
     "arguments": {"count": 1}}
  ]
}
