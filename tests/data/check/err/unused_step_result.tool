{
  "responses": [{"name": "files", "type_name": "list", "required": true}],
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}},
    {"execution_id": "count", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": 2}}
  ],
  "response_reference_map": {"files": "REF:scan.files"}
}
