{
  "arguments": [{"name": "verbose", "type_name": "boolean", "required": true}],
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/open_callee.tool"},
    {"execution_id": "list", "tool_definition_path": "/tools/open_callee.tool",
     "transform_arguments": {"transforms": {"names": "map(array=REF:fetch.rows, template=\"item.name\")"}}},
    {"execution_id": "debug", "dependencies": ["list"], "tool_definition_path": "/tools/open_callee.tool",
     "conditions": [{"param": "REF:arguments.verbose", "operator": "equals", "value": true}],
     "transform_arguments": {"transforms": {"doubled": "length(REF:fetch.rows) * 2"}}}
  ]
}
