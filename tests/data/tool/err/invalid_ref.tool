{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool",
     "arguments": {"x": {"deep": ["REF:arguments..x"]}}}
  ]
}
