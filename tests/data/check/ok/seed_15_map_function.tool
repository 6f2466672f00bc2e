{
  "description": "Seed example: map() Function",
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
          "user_list": "REF:user_data.users"
        },
        "transforms": {
          "user_summaries": "map(array=user_list, template={name: item.full_name, email: item.contact.email})"
        }
      }
    }
  ]
}
