{
  "description": "A transform step has no response: `REF:response` there is an error that says so (in a variable and in an expression)",
  "arguments": [
    {"name": "directory", "type_name": "string", "required": true}
  ],
  "instructions": [
    {
      "execution_id": "scan",
      "tool_definition_path": "/tools/lister.tool",
      "arguments": {"directory": "REF:arguments.directory"}
    },
    {
      "execution_id": "join",
      "transform_responses": {
        "variables": {"raw": "REF:response"},
        "transforms": {"files": "REF:response.files", "n": "raw"}
      }
    }
  ],
  "response_reference_map": {"n": "REF:join.n"}
}
