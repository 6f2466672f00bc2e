{"description": "The deepest composite of the chain (E0619)", "arguments": [], "instructions": [{"execution_id": "leaf", "tool_definition_path": "/tools/open_callee.tool"}]}
