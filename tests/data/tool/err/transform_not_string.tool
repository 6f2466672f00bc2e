{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool",
     "transform_arguments": {"transforms": {"threshold": 1000}}}
  ]
}
