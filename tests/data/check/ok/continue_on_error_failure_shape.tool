{
  "description": "A step under continue_on_error is its callee's answer or {\"status\": \"failed\", \"error_message\": …}: both are checked",
  "arguments": [{"name": "jobs", "type_name": "list<string>", "required": true}],
  "instructions": [
    {"execution_id": "job", "tool_definition_path": "/tools/status_reporter.tool",
     "arguments": {"job": "nightly"}, "continue_on_error": true},
    {"execution_id": "jobs", "tool_definition_path": "/tools/status_reporter.tool",
     "parallel_execution": {"iterate_over": "REF:arguments.jobs", "child_argument_name": "job"},
     "continue_on_error": true},
    {"execution_id": "report", "tool_definition_path": "/tools/open_callee.tool",
     "transform_arguments": {
       "variables": {"status": "REF:job.status", "error": "REF:job.error_message", "whole": "REF:job.response",
                     "count": "REF:job.count", "children": "REF:jobs.response"},
       "transforms": {
         "status_text": "upper(status)",
         "failed": "status == 'failed'",
         "failure": "lower(error)",
         "whole_status": "upper(to_string(whole.status))",
         "count_or_zero": "default(count, 0)",
         "child_errors": "map(children, 'lower(item.error_message)')"
       }}}
  ]
}
