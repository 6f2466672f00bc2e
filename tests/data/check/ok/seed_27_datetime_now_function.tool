{
  "description": "Seed example: datetime_now() Function",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "current_time": "datetime_now(format=\"iso\")",
          "timestamp": "datetime_now(format=\"unix\")"
        },
        "transforms": {
          "created_at": "current_time",
          "processing_time": "timestamp"
        }
      }
    }
  ]
}
