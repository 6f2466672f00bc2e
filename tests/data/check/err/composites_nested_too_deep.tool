{
  "description": "Calls a chain of nine composites nested in each other: a run allows 8 (E0619)",
  "arguments": [],
  "instructions": [
    {"execution_id": "deep", "tool_definition_path": "/nested/level1.tool"},
    {"execution_id": "again", "tool_definition_path": "/nested/level1.tool"}
  ]
}
