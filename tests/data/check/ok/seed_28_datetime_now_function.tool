{
  "description": "Seed example: datetime_now() Function",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "report_date": "datetime_now()",
          "log_timestamp": "datetime_now(format=\"unix\")"
        },
        "transforms": {
          "report_metadata": "create_object(generated_at=report_date, timestamp=log_timestamp)"
        }
      }
    }
  ]
}
