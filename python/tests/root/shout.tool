{
  "description": "Upper-cases every word, in parallel, and counts the letters of the result.",
  "arguments": [{"name": "words", "type_name": "list<string>", "required": true}],
  "instructions": [
    {"execution_id": "up", "tool_definition_path": "/tools/up.tool",
     "parallel_execution": {"iterate_over": "REF:arguments.words", "child_argument_name": "word"},
     "transform_responses": {"transforms": {"words": "map(array=REF:response, template=\"item.word\")"}}},
    {"execution_id": "count", "tool_definition_path": "/tools/count.tool",
     "transform_arguments": {"transforms": {"text": "join(array=REF:up.words, separator=\" \")"}}}
  ],
  "responses": [
    {"name": "words", "type_name": "list<string>", "required": true},
    {"name": "letters", "type_name": "integer", "required": true}
  ],
  "response_reference_map": {"words": "REF:up.words", "letters": "REF:count.letters"}
}
