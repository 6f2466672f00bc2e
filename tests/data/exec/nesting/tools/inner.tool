{
  "arguments": [{"name": "x", "type_name": "number", "required": true}],
  "instructions": [{"execution_id": "double", "tool_definition_path": "/tools/double.tool",
                    "arguments": {"x": "REF:arguments.x"},
                    "transform_responses": {"transforms": {"value": "REF:response.x * 2"}}}],
  "responses": [{"name": "value", "type_name": "number", "required": true}],
  "response_reference_map": {"value": "REF:double.value"}
}
