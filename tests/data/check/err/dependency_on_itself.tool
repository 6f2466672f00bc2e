{
  "instructions": [
    {"execution_id": "again", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": "REF:again.doubled"}}
  ]
}
