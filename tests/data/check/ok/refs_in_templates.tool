{
  "description": "REF atoms inside template strings make edges, even when written with escapes",
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}},
    {"execution_id": "limit", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": 3}},
    {"execution_id": "cap", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": 9}},
    {"execution_id": "long_names", "tool_definition_path": "/tools/counter.tool",
     "transform_arguments": {
       "variables": {"files": "REF:scan.files"},
       "transforms": {"count": "length(filter(array=files, condition_string=\"item.length > REF:limit.doubled\"))"}}},
    {"execution_id": "short_names", "tool_definition_path": "/tools/counter.tool",
     "transform_arguments": {
       "variables": {"files": "REF:scan.files"},
       "transforms": {"count": "length(filter(array=files, condition_string=\"item.length < \\u0052EF:cap.doubled\"))"}}}
  ]
}
