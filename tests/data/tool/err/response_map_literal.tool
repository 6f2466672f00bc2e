{
  "responses": [{"name": "out", "type_name": "number"}],
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool"}
  ],
  "response_reference_map": {"out": 42}
}
