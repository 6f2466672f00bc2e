{
  "description": "Hands its argument to a tool and returns what comes back.",
  "arguments": [{"name": "value", "type_name": "any", "required": true}],
  "instructions": [
    {"execution_id": "echo", "tool_definition_path": "/tools/echo.tool", "arguments": {"value": "REF:arguments.value"}}
  ],
  "responses": [{"name": "value", "type_name": "any", "required": false}],
  "response_reference_map": {"value": "REF:echo.value"}
}
