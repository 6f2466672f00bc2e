{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/docs"},
     "retry": {"max_retries": 4}}
  ]
}
