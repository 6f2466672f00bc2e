{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/listr.tool", "arguments": {"directory": "/tmp"}}
  ]
}
