{
  "description": "Seed example: Supported Operators (one condition per table row)",
  "instructions": [
    {
      "execution_id": "tags",
      "tool_definition_path": "/tools/tags.tool"
    },
    {
      "execution_id": "file",
      "tool_definition_path": "/tools/file.tool"
    },
    {
      "execution_id": "metrics",
      "tool_definition_path": "/tools/metrics.tool"
    },
    {
      "execution_id": "error",
      "tool_definition_path": "/tools/error.tool"
    },
    {
      "execution_id": "user",
      "tool_definition_path": "/tools/user.tool"
    },
    {
      "execution_id": "status",
      "tool_definition_path": "/tools/status.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "conditions": [
        {
          "param": "REF:status.code",
          "operator": "equals",
          "value": 200
        },
        {
          "param": "REF:status.result",
          "operator": "not_equals",
          "value": "failed"
        },
        {
          "param": "REF:user.email",
          "operator": "exists"
        },
        {
          "param": "REF:error.message",
          "operator": "not_exists"
        },
        {
          "param": "REF:metrics.score",
          "operator": "greater_than",
          "value": 0.8
        },
        {
          "param": "REF:file.size",
          "operator": "less_than",
          "value": 1000000
        },
        {
          "param": "REF:tags.list",
          "operator": "contains",
          "value": "urgent"
        },
        {
          "param": "REF:status.code",
          "operator": "in",
          "value": [
            200,
            201,
            202
          ]
        },
        {
          "param": "REF:file.name",
          "operator": "starts_with",
          "value": "report_"
        }
      ]
    }
  ]
}
