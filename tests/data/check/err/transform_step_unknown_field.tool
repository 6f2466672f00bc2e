{
  "description": "A transform step's result is exactly the object of its transforms: a REF to another field is the unknown-field warning, with the outputs in the help, and a mistyped use is an error",
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
      "transform_responses": {"transforms": {"count": "REF:scan.total", "names": "REF:scan.files"}}
    },
    {
      "execution_id": "double",
      "tool_definition_path": "/tools/counter.tool",
      "arguments": {"count": "REF:join.cuont"}
    },
    {
      "execution_id": "again",
      "tool_definition_path": "/tools/counter.tool",
      "arguments": {"count": "REF:join.names"}
    }
  ],
  "response_reference_map": {"a": "REF:double.doubled", "b": "REF:again.doubled"}
}
