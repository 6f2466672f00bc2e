{
  "system_event_endpoint": "builtin:echo",
  "response_reference_map": {"out": "REF:arguments.x"}
}
