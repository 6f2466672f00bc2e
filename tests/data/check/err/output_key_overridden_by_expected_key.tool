{
  "description": "The step's own expected_key wins: its callee's output_key does not name it (E0108)",
  "arguments": [],
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/revenue_fetcher.tool",
     "arguments": {"ticker": "AAPL"}, "expected_key": "revenue"},
    {"execution_id": "report", "tool_definition_path": "/tools/open_callee.tool",
     "arguments": {"total": "REF:revenue_data.total"}}
  ]
}
