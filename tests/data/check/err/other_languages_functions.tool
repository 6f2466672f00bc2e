{
  "description": "Python's `str`, `len` and a `sort_by` in transforms: the help gives tdsl's function, as in a plan",
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"},
     "transform_responses": {"transforms": {
       "label": "str(total)",
       "count": "len(files)",
       "ordered": "sort_by(files, \"name\")"}}}
  ]
}
