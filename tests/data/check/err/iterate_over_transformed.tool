{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}},
    {"execution_id": "each", "tool_definition_path": "/tools/counter.tool",
     "transform_arguments": {"variables": {"files": "REF:scan.files"}, "transforms": {"sizes": "map(array=files, template=\"item.length\")"}},
     "parallel_execution": {"iterate_over": "REF:arguments.sizes", "child_argument_name": "count"}}
  ]
}
