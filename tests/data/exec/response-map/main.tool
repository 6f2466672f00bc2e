{"instructions": [{"execution_id": "s", "tool_definition_path": "/tools/t.tool"}],
 "responses": [{"name": "count", "type_name": "number", "required": true},
               {"name": "note", "type_name": "string", "required": false}],
 "response_reference_map": {"count": "REF:s.count", "note": "REF:s.note"}}
