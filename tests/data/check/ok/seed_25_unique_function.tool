{
  "description": "Seed example: unique() Function",
  "instructions": [
    {
      "execution_id": "items",
      "tool_definition_path": "/tools/items.tool"
    },
    {
      "execution_id": "content",
      "tool_definition_path": "/tools/content.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "all_tags": "REF:content.tags",
          "categories": "REF:items.categories"
        },
        "transforms": {
          "unique_tags": "unique(array=all_tags)",
          "distinct_categories": "unique(array=categories)"
        }
      }
    }
  ]
}
