{
  "instructions": [
    {"execution_id": "call", "tool_definition_path": "/tools/recovers.tool",
     "retry": {"max_retries": 4, "base_delay_seconds": 0.1, "factor": 1, "jitter": 0}}
  ],
  "response_reference_map": {"ok": "REF:call.ok"}
}
