{
  "arguments": [{"name": "dir", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "quick", "tool_definition_path": "/tools/builtin_echo.tool", "arguments": {"dir": "REF:arguments.dir"}},
    {"execution_id": "slow", "tool_definition_path": "/tools/slow.tool", "arguments": {"dir": "REF:quick.dir"}},
    {"execution_id": "after", "tool_definition_path": "/tools/builtin_echo.tool", "arguments": {"x": "REF:slow.x"}}
  ]
}
