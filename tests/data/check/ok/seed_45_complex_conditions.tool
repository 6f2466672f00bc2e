{
  "description": "Seed example: Complex Conditions",
  "instructions": [
    {
      "execution_id": "user",
      "tool_definition_path": "/tools/user.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "conditions": [
        {
          "logic": "OR",
          "conditions": [
            {
              "param": "REF:user.role",
              "operator": "equals",
              "value": "admin"
            },
            {
              "logic": "AND",
              "conditions": [
                {
                  "param": "REF:user.level",
                  "operator": "greater_than",
                  "value": 5
                },
                {
                  "param": "REF:user.verified",
                  "operator": "equals",
                  "value": true
                }
              ]
            }
          ]
        }
      ]
    }
  ]
}
