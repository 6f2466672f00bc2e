{
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": 1}},
    {"execution_id": "cleanup", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": 2}, "dependencies": ["fetcj"]}
  ]
}
