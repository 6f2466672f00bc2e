{
  "arguments": [{"name": "id", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "issue", "tool_definition_path": "/tools/issue_tracker.tool", "arguments": {"id": "REF:arguments.id"}},
    {"execution_id": "reopen", "tool_definition_path": "/tools/issue_tracker.tool", "arguments": {"id": "REF:arguments.id"},
     "conditions": [{"param": "REF:issue.state", "operator": "equals", "value": "Closed"}]},
    {"execution_id": "triage", "tool_definition_path": "/tools/issue_tracker.tool", "arguments": {"id": "REF:arguments.id"},
     "conditions": [{"param": "REF:issue.state", "operator": "in", "value": ["merged", "draft"]}]},
    {"execution_id": "fine", "tool_definition_path": "/tools/issue_tracker.tool", "arguments": {"id": "REF:arguments.id"},
     "conditions": [{"param": "REF:issue.state", "operator": "in", "value": ["open", "merged"]}]}
  ]
}
