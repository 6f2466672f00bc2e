{
  "description": "Seed example: Complex Data Shaping with Pipeline",
  "instructions": [
    {
      "execution_id": "data_fetcher",
      "tool_definition_path": "/tools/data_fetcher.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "api_response": "REF:data_fetcher.raw_response",
          "sales_path": "data.sales_records",
          "threshold": 1000
        },
        "transforms": {
          "high_value_sales": "pipeline(api_response, [json_parse(json_string=current), get_object_property(obj=current, property_path=sales_path), map(array=current, template={amount: item.total, customer: item.customer_name})])",
          "revenue_total": "pipeline(api_response, [json_parse(json_string=current), get_object_property(obj=current, property_path=sales_path), sum(array=current, item_path=\"item.total\")])"
        }
      }
    }
  ]
}
