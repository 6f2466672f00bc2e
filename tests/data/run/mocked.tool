{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/not_written_yet.tool", "arguments": {"q": 1},
     "retry": {"max_retries": 2, "base_delay_seconds": 0.1}},
    {"execution_id": "b", "tool_definition_path": "/tools/hang.tool", "arguments": {"from": "REF:a.answer"}}
  ],
  "response_reference_map": {"a": "REF:a.answer", "b": "REF:b.n"}
}
