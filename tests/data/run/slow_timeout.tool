{
  "arguments": [{"name": "dir", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "slow", "tool_definition_path": "/tools/slow.tool", "arguments": {"dir": "REF:arguments.dir"},
     "timeout_seconds": 1, "retry": {"max_retries": 0}}
  ]
}
