{
  "description": "`as` may not take a name bound there already: a step (a REF context), a variable, an enclosing `as`; nor be a non-literal",
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}},
    {"execution_id": "count_files", "tool_definition_path": "/tools/counter.tool",
     "transform_arguments": {
       "variables": {"files": "REF:scan.files"},
       "transforms": {
         "count": "length(map(array=files, as=\"scan\", template=scan.length + REF:scan.total)) + length(map(array=files, as=\"files\", template=files)) + length(map(array=files, as=\"f\", template=map(array=files, as=\"f\", template=f))) + length(map(array=files, as=f, template=item))"}}}
  ]
}
