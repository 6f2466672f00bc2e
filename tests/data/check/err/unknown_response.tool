{
  "responses": [{"name": "total", "type_name": "integer", "required": true}],
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}}
  ],
  "response_reference_map": {"total": "REF:scan.total", "totl": "REF:scan.total"}
}
