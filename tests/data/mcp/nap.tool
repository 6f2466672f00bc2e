{
  "description": "A composite whose one step sleeps: the call to cancel",
  "arguments": [
    {"name": "pid_file", "type_name": "string", "required": true},
    {"name": "seconds", "type_name": "number", "required": true}
  ],
  "instructions": [
    {
      "execution_id": "nap",
      "tool_definition_path": "/tools/sleep.tool",
      "arguments": {"pid_file": "REF:arguments.pid_file", "seconds": "REF:arguments.seconds"}
    }
  ],
  "response_reference_map": {"slept": "REF:nap.slept"}
}
