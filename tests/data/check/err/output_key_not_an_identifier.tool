{
  "description": "A tool's output_key names results in REFs: an identifier, not a reserved name (E0517)",
  "arguments": [],
  "responses": [],
  "output_key": "revenue data",
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/revenue_fetcher.tool", "arguments": {"ticker": "AAPL"}}
  ]
}
