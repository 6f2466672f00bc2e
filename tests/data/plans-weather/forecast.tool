{
  "description": "Tomorrow's forecast for a city (the upstream server `weather` of the plan corpus, tests/mcp_plans.rs)",
  "arguments": [
    {"name": "city", "type_name": "string", "required": true},
    {"name": "days", "type_name": "integer", "required": false}
  ],
  "responses": [
    {"name": "city", "type_name": "string", "required": true},
    {"name": "high_c", "type_name": "number", "required": true},
    {"name": "summary", "type_name": "string", "required": true}
  ],
  "instructions": [
    {
      "execution_id": "f",
      "tool_definition_path": "/tools/echo.tool",
      "arguments": {"city": "REF:arguments.city"},
      "transform_responses": {"transforms": {"high_c": "21.5", "summary": "'sunny in ' + city"}}
    }
  ],
  "response_reference_map": {"city": "REF:f.city", "high_c": "REF:f.high_c", "summary": "REF:f.summary"}
}
