{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool",
     "transform_arguments": {"transforms": {"directory": "REF:response.dir"}}}
  ]
}
