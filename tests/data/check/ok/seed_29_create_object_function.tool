{
  "description": "Seed example: create_object() Function",
  "instructions": [
    {
      "execution_id": "user_data",
      "tool_definition_path": "/tools/user_data.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "user_name": "REF:user_data.name",
          "user_email": "REF:user_data.email",
          "current_time": "datetime_now()"
        },
        "transforms": {
          "user_summary": "create_object(name=user_name, email=user_email, last_updated=current_time)",
          "metadata": "create_object(version=\"1.0\", status=\"active\")"
        }
      }
    }
  ]
}
