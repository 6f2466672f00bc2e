{
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/open_callee.tool"},
    {"execution_id": "list", "tool_definition_path": "/tools/open_callee.tool",
     "conditions": [{"param": "REF:fetch.rows", "operator": "greater_than", "value": 0}],
     "transform_arguments": {"transforms": {"names": "map(array=REF:fetch.rows, template=\"item.name\")"}}}
  ]
}
