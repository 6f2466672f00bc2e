{"instructions": [
  {"execution_id": "src", "tool_definition_path": "/tools/source.tool"},
  {"execution_id": "use", "tool_definition_path": "/tools/typed.tool", "arguments": {"count": "REF:src.n"}}
]}
