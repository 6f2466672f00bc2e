{
  "system_event_endpoint": "builtin:echo",
  "instructions": [
    {"execution_id": "a", "arguments": {"x": "REF:arguments..x"}}
  ],
  "response_reference_map": {"out": "a.x"}
}
