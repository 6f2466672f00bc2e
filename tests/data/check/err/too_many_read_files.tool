{
  "instructions": [
    {"execution_id": "read", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": 1},
     "transform_responses": {"transforms": {"texts": "read_files(file_paths=[\"a\", \"b\", \"c\", \"d\", \"e\", \"f\"])"}}}
  ]
}
