{
  "description": "Calls a chain of eight composites nested in each other: exactly what a run allows",
  "arguments": [],
  "instructions": [
    {"execution_id": "deep", "tool_definition_path": "/nested/level2.tool"}
  ]
}
