{
  "description": "Add an objective to the decision analysis. Use when the user mentions something they want to achieve or avoid.",
  "arguments": [
    {"name": "name", "type_name": "string", "required": true,
     "description": "Brief name for the objective (e.g., 'Maximize compensation', 'Minimize commute')"},
    {"name": "measure", "type_name": "string", "required": true,
     "description": "How to measure this objective (e.g., 'Total comp in $/year', 'Minutes per day')"},
    {"name": "direction", "type_name": "string", "required": true,
     "enum": ["higher", "lower", "target"],
     "description": "Whether higher values are better, lower are better, or a specific target"},
    {"name": "is_fundamental", "type_name": "boolean", "required": true,
     "description": "True if this is a fundamental objective (what really matters), false if it's a means objective (way to achieve something else)"}
  ],
  "responses": [
    {"name": "objective_id", "type_name": "string", "required": true},
    {"name": "objective_type", "type_name": "string", "required": true, "enum": ["fundamental", "means"]},
    {"name": "total_fundamental", "type_name": "integer", "required": true, "minimum": 0},
    {"name": "total_means", "type_name": "integer", "required": true, "minimum": 0}
  ],
  "system_event_endpoint": "builtin:echo"
}
