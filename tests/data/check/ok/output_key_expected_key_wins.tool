{
  "description": "A step's own expected_key wins over its callee's output_key; another step may then take the output_key",
  "arguments": [],
  "instructions": [
    {"execution_id": "last_year", "tool_definition_path": "/tools/revenue_fetcher.tool",
     "arguments": {"ticker": "AAPL"}, "expected_key": "revenue_2023"},
    {"execution_id": "this_year", "tool_definition_path": "/tools/revenue_fetcher.tool",
     "arguments": {"ticker": "AAPL"}},
    {"execution_id": "compare", "tool_definition_path": "/tools/open_callee.tool",
     "arguments": {"before": "REF:revenue_2023.total", "now": "REF:revenue_data.total"}}
  ]
}
