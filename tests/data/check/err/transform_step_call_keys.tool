{
  "description": "A transform step calls nothing: the keys that configure a call are errors on it, each at its key (E0522)",
  "arguments": [
    {"name": "dirs", "type_name": "list<string>", "required": true}
  ],
  "instructions": [
    {
      "execution_id": "join",
      "arguments": {"directory": "REF:arguments.dirs"},
      "transform_arguments": {"transforms": {"pattern": "\"*.md\""}},
      "parallel_execution": {"iterate_over": "REF:arguments.dirs", "child_argument_name": "directory"},
      "retry": {"max_retries": 2},
      "timeout_seconds": 30,
      "continue_on_error": true,
      "done_check": "false",
      "done_value": {"n": 0},
      "transform_responses": {"transforms": {"n": "REF:arguments.dirs.length"}}
    }
  ]
}
