{
  "arguments": [{"name": "id", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "issue", "tool_definition_path": "/tools/issue_tracker.tool", "arguments": {"id": "REF:arguments.id"}},
    {"execution_id": "report", "transform_responses": {
      "variables": {"state": "REF:issue.state"},
      "transforms": {"is_open": "state == 'Opened'", "still_open": "if(state != 'CLOSED', 'yes', 'no')"}
    }}
  ],
  "response_reference_map": {"is_open": "REF:report.is_open", "still_open": "REF:report.still_open"}
}
