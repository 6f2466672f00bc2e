{
  "instructions": [
    {"execution_id": "add", "tool_definition_path": "/tools/add_objective.tool",
     "arguments": {"name": "Commute", "measure": "Minutes per day", "direction": "up", "is_fundamental": true}}
  ],
  "response_reference_map": {"id": "REF:add.objective_id"}
}
