{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool",
     "arguments": {"directory": "REF:arguments.folder", "pattern": "REF:arguments.folder"}}
  ]
}
