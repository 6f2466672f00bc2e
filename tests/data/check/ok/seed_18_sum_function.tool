{
  "description": "Seed example: sum() Function",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_responses": {
        "variables": {
          "invoice_items": "REF:response.line_items"
        },
        "transforms": {
          "total_cost": "sum(array=invoice_items, item_path=\"item.amount\")",
          "item_count": "REF:response.line_items.length"
        }
      }
    }
  ]
}
