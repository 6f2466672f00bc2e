{"instructions": [{"execution_id": "s", "tool_definition_path": "/tools/typed.tool"}],
 "response_reference_map": {"summary": "REF:s.summary"}}
