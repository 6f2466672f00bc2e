{"instructions": [
  {"execution_id": "outer", "tool_definition_path": "/tools/inner.tool", "arguments": {"x": 21}}
]}
