{
  "description": "Three steps in a row, each adding one to n after a pause: the call to watch progress on",
  "arguments": [
    {"name": "start", "type_name": "integer", "required": true}
  ],
  "instructions": [
    {"execution_id": "first", "tool_definition_path": "/tools/pause.tool", "arguments": {"n": "REF:arguments.start"}},
    {"execution_id": "second", "tool_definition_path": "/tools/pause.tool", "arguments": {"n": "REF:first.n"}},
    {"execution_id": "third", "tool_definition_path": "/tools/pause.tool", "arguments": {"n": "REF:second.n"}}
  ],
  "responses": [
    {"name": "n", "type_name": "integer", "required": true}
  ],
  "response_reference_map": {"n": "REF:third.n"}
}
