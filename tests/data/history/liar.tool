{
  "instructions": [
    {"execution_id": "ask", "tool_definition_path": "/tools/liar.tool"}
  ]
}
