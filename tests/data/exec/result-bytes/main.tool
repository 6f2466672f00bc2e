{
  "arguments": [{"name": "items", "type_name": "list", "required": true}],
  "instructions": [{"execution_id": "fan", "tool_definition_path": "/tools/echo.tool",
    "parallel_execution": {"iterate_over": "REF:arguments.items", "child_argument_name": "text"}}],
  "response_reference_map": {"echoes": "REF:fan.response"}
}
