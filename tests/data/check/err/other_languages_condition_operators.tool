{
  "description": "A condition operator spelt `>` and `gt`: the help gives tdsl's name, as in a plan",
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}},
    {"execution_id": "double", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": "REF:scan.total"},
     "conditions": [{"param": "REF:scan.total", "operator": ">", "value": 3}]},
    {"execution_id": "again", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": "REF:scan.total"},
     "conditions": [{"param": "REF:scan.total", "operator": "gt", "value": 3}]}
  ]
}
