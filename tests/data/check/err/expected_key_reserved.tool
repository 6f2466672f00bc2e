{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/docs"},
     "expected_key": "response", "output_path": ["files", -1, true]}
  ]
}
