{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/scanner.tool"},
    {"execution_id": "join", "tool_definition_path": null,
     "transform_responses": {"transforms": {"n": "REF:scan.total"}}}
  ]
}
