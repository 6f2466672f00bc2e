{"arguments": [{"name": "names", "type_name": "list<string>", "required": true}],
 "instructions": [
  {"execution_id": "s", "tool_definition_path": "/tools/t.tool",
   "arguments": {"sep": "-", "mode": "as written", "names": "REF:arguments.names"},
   "transform_arguments": {
     "variables": {"sep": ", ", "extra": ["REF:arguments.names.first", "static"]},
     "transforms": {
       "joined": "join(array=names, separator=sep)",
       "shout": "upper(joined)",
       "mode": "if(length(extra) == 2, shout + '!', 'no')"
     }},
   "transform_responses": {
     "variables": {"n": "REF:response.names.length"},
     "transforms": {"count": "n", "twice": "count * 2", "from_ref": "REF:response.joined"}
   }}
]}
