{
  "description": "C's and JavaScript's `a ? b : c` in a transform: the help gives tdsl's `if(…)`, as in a plan",
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"},
     "transform_responses": {"transforms": {"size": "total > 2 ? \"many\" : \"few\""}}}
  ]
}
