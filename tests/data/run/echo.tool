{
  "arguments": [{"name": "name", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "greet", "tool_definition_path": "/tools/echo.tool",
     "arguments": {"greeting": "hello", "name": "REF:arguments.name"}},
    {"execution_id": "again", "tool_definition_path": "/tools/builtin_echo.tool",
     "arguments": {"text": "REF:greet.greeting"},
     "transform_arguments": {"transforms": {"shout": "upper(REF:greet.name)"}}}
  ],
  "response_reference_map": {"name": "REF:greet.name", "text": "REF:again.text", "shout": "REF:again.shout"}
}
