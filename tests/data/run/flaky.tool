{
  "arguments": [{"name": "state", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "try", "tool_definition_path": "/tools/flaky.tool", "arguments": {"state": "REF:arguments.state"},
     "retry": {"max_retries": 3, "base_delay_seconds": 0.1, "jitter": 0}}
  ],
  "response_reference_map": {"calls": "REF:try.calls"}
}
