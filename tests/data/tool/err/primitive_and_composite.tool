{
  "system_event_endpoint": "builtin:echo",
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool"}
  ]
}
