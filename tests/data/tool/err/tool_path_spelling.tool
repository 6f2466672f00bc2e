{
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/a.tool\r\n"},
    {"execution_id": "b", "tool_definition_path": " /tools/b.tool"},
    {"execution_id": "c", "tool_definition_path": "/tools/c\u00a0tool.tool"},
    {"execution_id": "d", "tool_definition_path": "\u200b/tools/d.tool"},
    {"execution_id": "e", "tool_definition_path": "/tools/my tool.tool"}
  ]
}
