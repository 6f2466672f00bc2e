{
  "description": "The failure shape adds alternatives, it does not make a field `any`: `count` is `integer | null` (null when the step failed)",
  "arguments": [],
  "instructions": [
    {"execution_id": "job", "tool_definition_path": "/tools/status_reporter.tool",
     "arguments": {"job": "nightly"}, "continue_on_error": true},
    {"execution_id": "report", "tool_definition_path": "/tools/open_callee.tool",
     "transform_arguments": {
       "variables": {"count": "REF:job.count", "status": "REF:job.status"},
       "transforms": {"label": "count + ' items'", "bad": "status + [1]"}}}
  ]
}
