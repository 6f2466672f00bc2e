{
  "description": "`as` names a template's element in transforms: a nested template reads the outer element by its name, and its type flows through the name",
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}},
    {"execution_id": "longer_pairs", "tool_definition_path": "/tools/counter.tool",
     "transform_arguments": {
       "variables": {"files": "REF:scan.files"},
       "transforms": {"count": "length(flatten(map(array=files, as=\"file\", template=filter(array=files, condition_string=\"item.length > file.length\"))))"}},
     "transform_responses": {
       "transforms": {"labels": "map(array=REF:scan.files, as=\"name\", template=name + '=' + to_string(REF:response.doubled))"}}}
  ]
}
