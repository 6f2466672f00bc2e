{
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/open_callee.tool"},
    {"execution_id": "alert", "tool_definition_path": "/tools/open_callee.tool",
     "conditions": [{"param": "REF:fetch.score", "operator": "greater_than", "value": 3}]}
  ],
  "responses": [{"name": "score", "type_name": "string", "required": true}, {"name": "alert", "type_name": "any"}],
  "response_reference_map": {"score": "REF:fetch.score", "alert": "REF:alert"}
}
