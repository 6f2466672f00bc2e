{"instructions": [
  {"execution_id": "s", "tool_definition_path": "/tools/t.tool", "arguments": {"n": 3, "word": "x"}},
  {"execution_id": "skip", "conditions": [{"param": "REF:s.n", "operator": "greater_than", "value": 5}],
   "transform_responses": {"transforms": {"n": "REF:s.n"}}},
  {"execution_id": "broken", "dependencies": ["skip"],
   "transform_responses": {"variables": {"w": "REF:s.word"}, "transforms": {"n": "json_parse(w)"}}}
]}
