{
  "description": "Stub for the checker's tests: aggregator",
  "arguments": [
    {
      "name": "successful_analyses",
      "type_name": "number"
    },
    {
      "name": "combined_metrics",
      "type_name": "number"
    },
    {
      "name": "total_chunks",
      "type_name": "integer"
    }
  ],
  "responses": [
    {
      "name": "aggregated_data",
      "type_name": "list"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
