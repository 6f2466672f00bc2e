{
  "description": "Seed example: Parallel Processing for Scale",
  "instructions": [
    {
      "execution_id": "batch_items",
      "tool_definition_path": "/tools/batch_items.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "parallel_execution": {
        "iterate_over": "REF:batch_items.list",
        "child_argument_name": "item"
      }
    }
  ]
}
