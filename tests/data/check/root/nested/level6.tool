{"description": "Level 6 of a chain of nested composites (E0619)", "arguments": [], "instructions": [{"execution_id": "down", "tool_definition_path": "/nested/level7.tool"}]}
