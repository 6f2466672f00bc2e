{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": "REF:c.doubled"}},
    {"execution_id": "b", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": "REF:a.doubled"}},
    {"execution_id": "c", "tool_definition_path": "/tools/counter.tool",
     "transform_arguments": {"transforms": {"count": "REF:b.doubled + 1"}}}
  ]
}
