{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool", "timeout_seconds": 1e17,
     "retry": {"max_retries": 6, "base_delay_seconds": 1e20, "max_delay_seconds": 1e300, "factor": 0.5, "jitter": 0.75}}
  ]
}
