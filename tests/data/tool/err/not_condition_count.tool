{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool",
     "conditions": [{"logic": "NOT", "conditions": [
       {"param": "REF:arguments.x", "operator": "exists"},
       {"param": "REF:arguments.y", "operator": "exists"}
     ]}]}
  ]
}
