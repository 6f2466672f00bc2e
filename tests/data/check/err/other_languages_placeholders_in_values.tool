{
  "description": "Placeholders of other plan formats and JSONPath as values: the findings and help a plan gets (E1311, E1312 when they name a step or an argument; W1311, W1312 when they name nothing)",
  "arguments": [{"name": "folder", "type_name": "string", "required": true}],
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "{{folder}}"}},
    {"execution_id": "double", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": "$1.total"}},
    {"execution_id": "names", "tool_definition_path": "/tools/lister.tool",
     "arguments": {"directory": "REF:arguments.folder", "pattern": "$.scan.files[*]"}},
    {"execution_id": "text", "tool_definition_path": "/tools/lister.tool",
     "arguments": {"directory": "REF:arguments.folder", "pattern": "costs $5, see $.store.book"}}
  ],
  "response_reference_map": {"total": "#E2.doubled", "names": "REF:names.files"}
}
