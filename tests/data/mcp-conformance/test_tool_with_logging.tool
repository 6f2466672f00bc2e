{
  "description": "conformance scenario tools-call-with-logging: three steps of 50 ms, one `started` log message each (at level info)",
  "instructions": [
    {"execution_id": "first", "tool_definition_path": "/bin/pause.tool", "arguments": {}},
    {"execution_id": "second", "tool_definition_path": "/bin/pause.tool", "arguments": {}, "dependencies": ["first"]},
    {"execution_id": "third", "tool_definition_path": "/bin/pause.tool", "arguments": {}, "dependencies": ["second"]}
  ],
  "response_reference_map": {"first": "REF:first", "second": "REF:second", "third": "REF:third"}
}
