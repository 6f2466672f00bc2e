{"instructions": [
  {"execution_id": "s", "tool_definition_path": "/tools/typed.tool",
   "transform_responses": {"transforms": {"summary": "upper(REF:response.text)"}}}
],
"response_reference_map": {"summary": "REF:s.summary"}}
