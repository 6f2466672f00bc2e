{"description": "Level 4 of a chain of nested composites (E0619)", "arguments": [], "instructions": [{"execution_id": "down", "tool_definition_path": "/nested/level5.tool"}]}
