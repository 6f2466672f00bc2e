{
  "arguments": [{"name": "as_list", "type_name": "boolean", "required": true}],
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/open_callee.tool"},
    {"execution_id": "shape", "tool_definition_path": "/tools/open_callee.tool",
     "transform_arguments": {"variables": {"flag": "REF:arguments.as_list"},
       "transforms": {"out": "if(flag, join(array=REF:fetch.data), REF:fetch.data * 2)"}}}
  ]
}
