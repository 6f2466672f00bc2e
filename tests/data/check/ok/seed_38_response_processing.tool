{
  "description": "Seed example: Response Processing",
  "instructions": [
    {
      "execution_id": "data_fetcher",
      "tool_definition_path": "/tools/data_fetcher.tool"
    },
    {
      "execution_id": "process_results",
      "tool_definition_path": "/tools/data_processor.tool",
      "arguments": {
        "raw_data": "REF:data_fetcher.results"
      },
      "transform_responses": {
        "variables": {
          "processed_items": "REF:response.processed_items",
          "success_template": "item.success",
          "delimiter": "; "
        },
        "transforms": {
          "summary_report": "join(array=map(array=processed_items, template=\"item.description\"), separator=delimiter)",
          "success_count": "sum(array=map(array=processed_items, template=success_template), item_path=\"item.value\")"
        }
      }
    }
  ]
}
