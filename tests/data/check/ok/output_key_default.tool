{
  "description": "A callee's output_key names the result of the step that calls it: REF:revenue_data works like REF:fetch (seed 002, SPEC §5)",
  "arguments": [{"name": "ticker", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "fetch", "tool_definition_path": "/tools/revenue_fetcher.tool",
     "arguments": {"ticker": "REF:arguments.ticker"}},
    {"execution_id": "report", "tool_definition_path": "/tools/open_callee.tool",
     "arguments": {"total": "REF:revenue_data.total"},
     "transform_arguments": {
       "variables": {"currency": "REF:revenue_data.currency"},
       "transforms": {"label": "upper(currency) + ' ' + to_string(REF:revenue_data.total)"}}}
  ]
}
