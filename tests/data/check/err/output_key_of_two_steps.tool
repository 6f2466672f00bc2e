{
  "description": "Two steps call a tool whose output_key is revenue_data: the name is neither's, and a REF to it says so (E0108)",
  "arguments": [],
  "instructions": [
    {"execution_id": "apple", "tool_definition_path": "/tools/revenue_fetcher.tool", "arguments": {"ticker": "AAPL"}},
    {"execution_id": "google", "tool_definition_path": "/tools/revenue_fetcher.tool", "arguments": {"ticker": "GOOG"}},
    {"execution_id": "report", "tool_definition_path": "/tools/open_callee.tool",
     "arguments": {"total": "REF:revenue_data.total"},
     "transform_arguments": {"transforms": {"label": "to_string(REF:revenue_data.currency)"}}}
  ]
}
