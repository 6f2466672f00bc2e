{
  "arguments": [{"name": "folder", "type_name": "string", "required": true}],
  "transform_arguments": {"variables": {"n": "REF:scan.total"}, "transforms": {"count": "n"}},
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "REF:arguments.folder"}}
  ]
}
