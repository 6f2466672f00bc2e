{
  "description": "Seed example: group_by() Function",
  "instructions": [
    {
      "execution_id": "financial_data",
      "tool_definition_path": "/tools/financial_data.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "transactions": "REF:financial_data.transactions"
        },
        "transforms": {
          "by_category": "group_by(array=transactions, key_path=\"item.category\")",
          "by_status": "group_by(array=transactions, key_path=\"item.status\")"
        }
      }
    }
  ]
}
