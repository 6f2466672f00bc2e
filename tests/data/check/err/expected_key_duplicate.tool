{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/docs"},
     "expected_key": "files"},
    {"execution_id": "files", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/src"},
     "expected_key": "listing"},
    {"execution_id": "again", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/lib"},
     "expected_key": "listing"},
    {"execution_id": "same", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/etc"},
     "expected_key": "same"}
  ],
  "response_reference_map": {"a": "REF:listing", "b": "REF:again", "c": "REF:scan", "d": "REF:same"}
}
