{
  "responses": [{"name": "out"}],
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool"}
  ],
  "response_reference_map": {"out": "REF:a.b c"}
}
