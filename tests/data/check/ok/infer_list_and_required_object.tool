{
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/open_callee.tool"},
    {"execution_id": "report", "tool_definition_path": "/tools/open_callee.tool",
     "transform_arguments": {"transforms": {"titles": "map(array=REF:fetch.items, template=\"item.title\")"}}}
  ],
  "responses": [{"name": "items", "type_name": "list", "required": true}, {"name": "report", "type_name": "any"}],
  "response_reference_map": {"items": "REF:fetch.items", "report": "REF:report"}
}
