{
  "descripton": "every problem below is reported in one run",
  "arguments": [
    {"name": "path", "type_name": "strng", "required": "yes"},
    {"type_name": "string"}
  ],
  "instructions": [
    {"execution_id": "item", "tool_definition_path": "/tools/a.tool"},
    {"execution_id": "b", "tool_definition_path": "/tools/b.tool",
     "conditions": [{"param": "REF:item.x", "operator": "equal", "value": 1},
                    {"param": "REF:item.y", "operator": "exists", "value": 2}],
     "retry": {"jitter": 5},
     "arguments": {"x": "REF:item..x"}},
    {"execution_id": "b", "tool_definition_path": "/tools/c.tool"}
  ]
}
