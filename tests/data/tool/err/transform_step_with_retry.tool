{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/scanner.tool"},
    {"execution_id": "join", "retry": {"max_retries": 1},
     "transform_responses": {"transforms": {"n": "REF:scan.total"}}}
  ]
}
