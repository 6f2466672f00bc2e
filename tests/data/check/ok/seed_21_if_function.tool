{
  "description": "Seed example: if() Function",
  "instructions": [
    {
      "execution_id": "process",
      "tool_definition_path": "/tools/process.tool"
    },
    {
      "execution_id": "validation",
      "tool_definition_path": "/tools/validation.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "error_count": "REF:validation.error_count",
          "status": "REF:process.status"
        },
        "transforms": {
          "result_message": "if(error_count, \"Errors found\", \"Success\")",
          "priority_level": "if(status, \"high\", \"normal\")"
        }
      }
    }
  ]
}
