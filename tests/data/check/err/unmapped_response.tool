{
  "responses": [
    {"name": "files", "type_name": "list", "required": true},
    {"name": "total", "type_name": "integer", "required": true}
  ],
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}}
  ],
  "response_reference_map": {"files": "REF:scan.files"}
}
