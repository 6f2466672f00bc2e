{
  "arguments": [{"name": "user", "type_name": "any", "required": true}],
  "instructions": [
    {"execution_id": "greet", "tool_definition_path": "/tools/open_callee.tool",
     "arguments": {"name": "REF:arguments.user.name"},
     "transform_arguments": {"transforms": {"shout": "REF:arguments.user.age - 1"}}}
  ]
}
