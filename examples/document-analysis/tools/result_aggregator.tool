{
  "description": "Gathers the analyses into one summary (the engine's echo builtin: the work is in the composite's transforms)",
  "arguments": [
    {"name": "analysis_level", "type_name": "string", "required": true},
    {"name": "total_documents", "type_name": "integer", "required": true},
    {"name": "analysis_summary", "type_name": "list", "required": true},
    {"name": "combined_insights", "type_name": "string", "required": true},
    {"name": "assessments", "type_name": "list", "required": true}
  ],
  "responses": [
    {"name": "analysis_level", "type_name": "string", "required": true},
    {"name": "total_documents", "type_name": "integer", "required": true},
    {"name": "analysis_summary", "type_name": "list", "required": true},
    {"name": "combined_insights", "type_name": "string", "required": true},
    {"name": "assessments", "type_name": "list", "required": true}
  ],
  "system_event_endpoint": "builtin:echo"
}
