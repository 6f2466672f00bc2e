{
  "description": "Seed example: Conditional Error Handling",
  "instructions": [
    {
      "execution_id": "primary_task",
      "tool_definition_path": "/tools/primary_task.tool"
    },
    {
      "execution_id": "retry_on_failure",
      "tool_definition_path": "/tools/retry_handler.tool",
      "conditions": [
        {
          "param": "REF:primary_task.status",
          "operator": "equals",
          "value": "failed"
        }
      ],
      "arguments": {
        "original_request": "REF:arguments.request_data",
        "failure_reason": "REF:primary_task.error_message"
      }
    }
  ],
  "arguments": [
    {
      "name": "request_data",
      "type_name": "any",
      "required": true
    }
  ]
}
