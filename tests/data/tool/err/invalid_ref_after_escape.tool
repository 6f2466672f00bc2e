{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool",
     "arguments": {"x": "REF:\u0061rguments.x y"}}
  ]
}
