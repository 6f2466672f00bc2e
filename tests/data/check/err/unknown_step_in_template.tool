{
  "instructions": [
    {"execution_id": "limit", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": 3}},
    {"execution_id": "long_names", "tool_definition_path": "/tools/counter.tool",
     "transform_arguments": {
       "variables": {"files": ["a", "bb"]},
       "transforms": {"count": "length(filter(array=files, condition_string=\"item.length > REF:limt.doubled\"))"}}}
  ]
}
