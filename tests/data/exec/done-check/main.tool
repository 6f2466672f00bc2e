{"arguments": [{"name": "cached", "type_name": "object", "required": false}],
 "instructions": [
  {"execution_id": "fetch", "tool_definition_path": "/tools/t.tool",
   "arguments": {"cached": "REF:arguments.cached"},
   "done_check": [{"param": "REF:arguments.cached", "operator": "exists"}],
   "done_value": "REF:arguments.cached"},
  {"execution_id": "count", "tool_definition_path": "/tools/t.tool",
   "arguments": {"limit": 3, "have": "REF:fetch.n"},
   "done_check": "have >= limit", "done_value": {"n": "REF:fetch.n"}}
],
"response_reference_map": {"fetched": "REF:fetch", "counted": "REF:count"}}
