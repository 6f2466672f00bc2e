{
  "description": "Seed example: Response Mapping",
  "arguments": [
    {
      "name": "items",
      "type_name": "list",
      "required": true
    }
  ],
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
      "execution_id": "error_collector",
      "tool_definition_path": "/tools/error_collector.tool"
    },
    {
      "execution_id": "calculate_metrics",
      "tool_definition_path": "/tools/calculate_metrics.tool"
    },
    {
      "execution_id": "parallel_processor",
      "tool_definition_path": "/tools/parallel_processor.tool",
      "parallel_execution": {
        "iterate_over": "REF:arguments.items",
        "child_argument_name": "item"
      }
    }
  ]
}
