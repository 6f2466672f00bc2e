{
  "description": "Description of what this tool does",
  "arguments": [
    {
      "name": "input_parameter",
      "type_name": "string",
      "description": "Description of the parameter",
      "required": true
    }
  ],
  "instructions": [
    {
      "execution_id": "step_1",
      "tool_definition_path": "/path/to/tool.tool",
      "arguments": {
        "param": "value"
      }
    }
  ],
  "responses": [
    {
      "name": "output_value",
      "type_name": "string",
      "description": "Description of the response",
      "required": true
    }
  ],
  "response_reference_map": {
    "output_value": "REF:step_1.result"
  }
}
