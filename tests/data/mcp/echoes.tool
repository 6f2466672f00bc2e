{
  "description": "Three steps in a row that take no time, each adding one to n",
  "arguments": [
    {"name": "start", "type_name": "integer", "required": true}
  ],
  "instructions": [
    {
      "execution_id": "first",
      "tool_definition_path": "/tools/echo.tool",
      "arguments": {"n": "REF:arguments.start"},
      "transform_responses": {"transforms": {"n": "n + 1"}}
    },
    {
      "execution_id": "second",
      "tool_definition_path": "/tools/echo.tool",
      "arguments": {"n": "REF:first.n"},
      "transform_responses": {"transforms": {"n": "n + 1"}}
    },
    {
      "execution_id": "third",
      "tool_definition_path": "/tools/echo.tool",
      "arguments": {"n": "REF:second.n"},
      "transform_responses": {"transforms": {"n": "n + 1"}}
    }
  ],
  "responses": [
    {"name": "n", "type_name": "integer", "required": true}
  ],
  "response_reference_map": {"n": "REF:third.n"}
}
