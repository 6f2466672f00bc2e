{
  "description": "Without continue_on_error a failure ends the run: `status` is only the declared integer (E0201)",
  "arguments": [],
  "instructions": [
    {"execution_id": "job", "tool_definition_path": "/tools/status_reporter.tool",
     "arguments": {"job": "nightly"}},
    {"execution_id": "report", "tool_definition_path": "/tools/open_callee.tool",
     "transform_arguments": {
       "variables": {"status": "REF:job.status"},
       "transforms": {"status_text": "upper(status)"}}}
  ]
}
