{
  "description": "Seed example: Response Mapping",
  "responses": [
    {
      "name": "processed_count",
      "type_name": "number",
      "description": "Number of items processed",
      "required": true
    },
    {
      "name": "success_rate",
      "type_name": "number",
      "description": "Percentage of successful operations",
      "required": true
    },
    {
      "name": "error_details",
      "type_name": "list",
      "description": "Details of any errors encountered",
      "required": false
    }
  ],
  "response_reference_map": {
    "processed_count": "REF:parallel_processor.response.length",
    "success_rate": "REF:calculate_metrics.success_percentage",
    "error_details": "REF:error_collector.error_list"
  },
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool"
    }
  ]
}
