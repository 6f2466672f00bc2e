{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"},
     "transform_responses": {"transforms": {"count": "length(REF:response.fils)"}}}
  ]
}
