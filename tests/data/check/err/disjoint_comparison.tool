{
  "description": "Equality between values of types that never overlap (E0208): an integer with a quoted number, in an expression and in conditions, and a sum of strings (E0201)",
  "arguments": [
    {"name": "words", "type_name": "list<string>", "required": true}
  ],
  "instructions": [
    {"execution_id": "count", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": 2}},
    {"execution_id": "again", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": 3},
     "conditions": [{"param": "REF:count.doubled", "operator": "equals", "value": "4"}]},
    {"execution_id": "among", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": 3},
     "conditions": [{"param": "REF:count.doubled", "operator": "in", "value": ["4", "6"]}]},
    {"execution_id": "fine", "tool_definition_path": "/tools/counter.tool", "arguments": {"count": 3},
     "conditions": [{"param": "REF:count.doubled", "operator": "in", "value": [4, "6"]}]},
    {"execution_id": "report", "transform_responses": {
      "variables": {"doubled": "REF:count.doubled", "words": "REF:arguments.words"},
      "transforms": {
        "four": "doubled == '4'",
        "not_four": "doubled != \"4\"",
        "flag": "(doubled > 2) == 'true'",
        "listed": "words == 'a'",
        "mixed": "doubled == 4.0",
        "total": "sum(array=words)",
        "mean": "avg(array=map(words, '{w: item}'), item_path='w')"
      }
    }}
  ],
  "response_reference_map": {"four": "REF:report.four", "not_four": "REF:report.not_four", "flag": "REF:report.flag", "listed": "REF:report.listed", "mixed": "REF:report.mixed", "total": "REF:report.total", "mean": "REF:report.mean"}
}
