{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool",
     "conditions": [{"param": "REF:arguments.x", "operator": "equal", "value": 1}]}
  ]
}
