{
  "responses": [
    {"name": "id", "type_name": "string", "required": true},
    {"name": "priority", "type_name": "integer", "minimum": 1, "maximum": 5}
  ],
  "instructions": [
    {"execution_id": "add", "tool_definition_path": "/tools/add_objective.tool",
     "arguments": {"name": "Commute", "measure": "Minutes per day", "direction": "lower", "is_fundamental": true}}
  ],
  "response_reference_map": {"id": "REF:add.objective_id", "priority": 9}
}
