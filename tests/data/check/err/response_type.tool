{
  "responses": [{"name": "count", "type_name": "number", "required": true}],
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}}
  ],
  "response_reference_map": {"count": "REF:scan.files"}
}
