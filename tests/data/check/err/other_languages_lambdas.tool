{
  "description": "An arrow function and a Python lambda in transforms: the help gives a template over `item`, as in a plan",
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"},
     "transform_responses": {"transforms": {
       "upper": "map(array=files, template=f => upper(f))",
       "long": "filter(files, lambda f: length(f) > 3)"}}}
  ]
}
