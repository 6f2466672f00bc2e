{
  "description": "Seed example: Condition Structure",
  "instructions": [
    {
      "execution_id": "api_call",
      "tool_definition_path": "/tools/api_call.tool"
    },
    {
      "execution_id": "conditional_step",
      "tool_definition_path": "/tools/error_handler.tool",
      "conditions": [
        {
          "param": "REF:api_call.status_code",
          "operator": "not_equals",
          "value": 200
        }
      ],
      "arguments": {
        "error_message": "REF:api_call.error"
      }
    }
  ]
}
