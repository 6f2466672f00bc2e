{
  "arguments": [{"name": "folder", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool",
     "transform_arguments": {"transforms": {"directory": "upper(REF:arguments.dir)"}}}
  ]
}
