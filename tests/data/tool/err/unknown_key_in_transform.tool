{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool",
     "transform_arguments": {"variable": {"x": 1}, "transforms": {"y": "x"}}}
  ]
}
