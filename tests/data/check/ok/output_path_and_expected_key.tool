{
  "arguments": [{"name": "folder", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool",
     "arguments": {"directory": "REF:arguments.folder"},
     "expected_key": "file_count", "output_path": ["total"]},
    {"execution_id": "double", "tool_definition_path": "/tools/counter.tool",
     "arguments": {"count": "REF:file_count"}},
    {"execution_id": "first_file", "tool_definition_path": "/tools/lister.tool",
     "arguments": {"directory": "REF:arguments.folder"},
     "output_path": ["files", 0]}
  ],
  "response_reference_map": {"doubled": "REF:double.doubled", "first": "REF:first_file", "count": "REF:scan"}
}
