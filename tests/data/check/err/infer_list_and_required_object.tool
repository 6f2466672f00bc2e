{
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/open_callee.tool"},
    {"execution_id": "report", "tool_definition_path": "/tools/open_callee.tool",
     "transform_arguments": {"transforms": {"titles": "map(array=REF:fetch.items, template=\"item.title\")"}}}
  ],
  "responses": [{"name": "items", "type_name": "object", "required": true}],
  "response_reference_map": {"items": "REF:fetch.items"}
}
