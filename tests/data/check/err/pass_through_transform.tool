{
  "arguments": [{"name": "folder", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool",
     "transform_arguments": {"variables": {"directory": "REF:arguments.folder"}, "transforms": {"directory": "directory"}}}
  ]
}
