{"instructions": [
  {"execution_id": "text", "tool_definition_path": "/tools/text.tool", "arguments": {"kind": "text"}},
  {"execution_id": "obj", "tool_definition_path": "/tools/obj.tool"}
],
"response_reference_map": {"a": "REF:text.response", "b": "REF:obj.response", "c": "REF:obj.response.k"}}
