{
  "description": "LLMCompiler's `$1.total`, ReWOO's `#E1.total` and JSONPath inside expressions: the help gives the REF, as a plan's does",
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"}},
    {"execution_id": "double", "tool_definition_path": "/tools/counter.tool",
     "transform_arguments": {"transforms": {"count": "$1.total * 2"}}},
    {"execution_id": "again", "tool_definition_path": "/tools/counter.tool",
     "transform_arguments": {"transforms": {"count": "#E1.total"}}},
    {"execution_id": "names", "tool_definition_path": "/tools/lister.tool",
     "transform_arguments": {"transforms": {"directory": "join(array=$.scan.files[*].name, separator=\",\")"}}}
  ]
}
