{
  "description": "Every status the report draws: completed, fanned out, retried, failed under continue_on_error, skipped",
  "arguments": [{"name": "state", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "first", "tool_definition_path": "/tools/work.tool", "arguments": {"n": 0}},
    {"execution_id": "fan", "tool_definition_path": "/tools/work.tool",
     "conditions": [{"param": "REF:first.n", "operator": "equals", "value": 0}],
     "parallel_execution": {"iterate_over": [0, 0, 0], "child_argument_name": "n"}},
    {"execution_id": "retry", "tool_definition_path": "/tools/flaky.tool", "arguments": {"state": "REF:arguments.state"},
     "retry": {"max_retries": 2, "base_delay_seconds": 0.1, "jitter": 0}},
    {"execution_id": "broken", "tool_definition_path": "/tools/fail.tool", "continue_on_error": true,
     "conditions": [{"param": "REF:retry.calls", "operator": "greater_than", "value": 0}]},
    {"execution_id": "never", "tool_definition_path": "/tools/work.tool", "arguments": {"n": 0},
     "conditions": [{"param": "REF:arguments.state", "operator": "equals", "value": "<never>"}]}
  ]
}
