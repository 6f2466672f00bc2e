{
  "arguments": [{"name": "id", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "issue", "tool_definition_path": "/tools/issue_tracker.tool", "arguments": {"id": "REF:arguments.id"}},
    {"execution_id": "report", "transform_responses": {
      "variables": {"title": "REF:issue.title", "assignee": "REF:issue.assignee"},
      "transforms": {"untitled": "title == null", "unassigned": "assignee == null"}
    }},
    {"execution_id": "titled", "tool_definition_path": "/tools/issue_tracker.tool", "arguments": {"id": "REF:arguments.id"},
     "conditions": [{"param": "REF:issue.title", "operator": "exists"}]},
    {"execution_id": "assigned", "tool_definition_path": "/tools/issue_tracker.tool", "arguments": {"id": "REF:arguments.id"},
     "conditions": [{"param": "REF:issue.assignee", "operator": "not_equals", "value": null}]}
  ],
  "response_reference_map": {"untitled": "REF:report.untitled", "unassigned": "REF:report.unassigned", "titled": "REF:titled.state", "assigned": "REF:assigned.state"}
}
