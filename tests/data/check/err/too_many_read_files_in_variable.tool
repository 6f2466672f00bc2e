{
  "instructions": [
    {"execution_id": "read", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": 1},
     "transform_responses": {
       "variables": {"paths": ["a.md", "b.md", "c.md", "d.md", "e.md", "f.md", "g.md"]},
       "transforms": {"texts": "read_files(paths)"}}}
  ]
}
