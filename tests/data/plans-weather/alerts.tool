{
  "description": "Weather alerts for a region (none, in this test server)",
  "arguments": [
    {"name": "region", "type_name": "string", "required": true}
  ],
  "instructions": [
    {"execution_id": "a", "tool_definition_path": "/tools/echo.tool", "arguments": {"region": "REF:arguments.region", "alerts": []}}
  ]
}
