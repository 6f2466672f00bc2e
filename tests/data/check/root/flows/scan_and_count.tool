{
  "description": "Lists a folder, counts it, and doubles the count of each file name's length",
  "arguments": [{"name": "folder", "type_name": "string", "required": true}],
  "responses": [
    {"name": "total", "type_name": "integer", "required": true},
    {"name": "doubled", "type_name": "list", "required": true},
    {"name": "report", "type_name": "integer"}
  ],
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool",
     "arguments": {"directory": "REF:arguments.folder", "pattern": "*.md"}},
    {"execution_id": "lengths", "tool_definition_path": "/tools/counter.tool",
     "conditions": [{"param": "REF:scan.total", "operator": "greater_than", "value": 0}],
     "transform_arguments": {"variables": {"files": "REF:scan.files"}, "transforms": {"count": "length(files)"}}},
    {"execution_id": "each", "tool_definition_path": "/tools/counter.tool",
     "parallel_execution": {"iterate_over": [1, 2, 3], "child_argument_name": "count"}},
    {"execution_id": "report", "tool_definition_path": "/tools/counter.tool",
     "arguments": {"count": "REF:lengths.doubled"}, "dependencies": ["each", "scan"]}
  ],
  "response_reference_map": {"total": "REF:scan.total", "doubled": "REF:each.response", "report": "REF:report.doubled"}
}
