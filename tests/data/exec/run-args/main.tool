{"arguments": [{"name": "n", "type_name": "integer", "required": true}],
 "instructions": [{"execution_id": "s", "tool_definition_path": "/tools/t.tool", "arguments": {"n": "REF:arguments.n"}}]}
