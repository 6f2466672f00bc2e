{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"},
     "transform_arguments": {"variables": {"pattern_text": "*.md", "unused": 3}, "transforms": {"pattern": "lower(pattern_text)"}}}
  ]
}
