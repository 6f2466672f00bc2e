{
  "arguments": [{"name": "folder", "type_name": "string", "required": true}],
  "responses": [{"name": "total", "type_name": "integer", "required": true}],
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "REF:arguments.fold"}},
    {"execution_id": "count", "tool_definition_path": "/tools/counter.tool",
     "arguments": {"count": "REF:scan.files"}, "dependencies": ["scna"],
     "transform_arguments": {"variables": {"unused": 1}, "transforms": {"extra": "upper(nme)"}}},
    {"execution_id": "missing", "tool_definition_path": "/tools/nowhere.tool"}
  ],
  "response_reference_map": {"totl": "REF:count.doubled"}
}
