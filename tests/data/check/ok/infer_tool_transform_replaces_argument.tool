{
  "arguments": [{"name": "data", "type_name": "any", "required": true}],
  "transform_arguments": {"transforms": {"data": "if(length(data) > 0, json_parse(data), null)"}},
  "instructions": [
    {"execution_id": "scale", "tool_definition_path": "/tools/open_callee.tool",
     "transform_arguments": {"transforms": {"twice": "REF:arguments.data * 2"}}}
  ]
}
