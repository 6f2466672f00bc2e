{
  "arguments": [{"name": "folder", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "open", "tool_definition_path": "/tools/open_callee.tool",
     "arguments": {"anything": "REF:arguments.folder", "more": [1, 2]},
     "transform_arguments": {"transforms": {"computed": "upper(REF:arguments.folder)"}}},
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool",
     "arguments": {"directory": "REF:open.whatever.it.returns"}}
  ]
}
