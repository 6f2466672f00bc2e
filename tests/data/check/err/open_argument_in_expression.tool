{
  "transform_arguments": {"transforms": {"folder": "lower(REF:arguments.root)"}},
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool",
     "arguments": {"directory": "REF:arguments.folder"},
     "transform_arguments": {"transforms": {"pattern": "REF:arguments.suffix + '*'"}}}
  ]
}
