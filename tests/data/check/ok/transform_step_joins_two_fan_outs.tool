{
  "description": "Two independent fan-outs joined by a transform step (SPEC §6.4 ext): the join calls nothing, so neither fan-out waits for the other",
  "arguments": [
    {"name": "dirs", "type_name": "list<string>", "required": true}
  ],
  "responses": [
    {"name": "total", "type_name": "integer", "required": true},
    {"name": "files", "type_name": "list<string>", "required": true},
    {"name": "doubled", "type_name": "integer"}
  ],
  "instructions": [
    {
      "execution_id": "sources",
      "tool_definition_path": "/tools/lister.tool",
      "arguments": {"pattern": "*.rs"},
      "parallel_execution": {"iterate_over": "REF:arguments.dirs", "child_argument_name": "directory"}
    },
    {
      "execution_id": "docs",
      "tool_definition_path": "/tools/lister.tool",
      "arguments": {"pattern": "*.md"},
      "parallel_execution": {"iterate_over": "REF:arguments.dirs", "child_argument_name": "directory"}
    },
    {
      "execution_id": "join",
      "description": "Both listings in one result",
      "expected_key": "joined",
      "transform_responses": {
        "variables": {"sources": "REF:sources.response", "docs": "REF:docs.response"},
        "transforms": {
          "files": "flatten(map(array=sources, template=\"item.files\")) + flatten(map(array=docs, template=\"item.files\"))",
          "total": "sum(array=sources, item_path=\"item.total\") + sum(array=docs, item_path=\"item.total\")"
        }
      }
    },
    {
      "execution_id": "report",
      "tool_definition_path": "/tools/counter.tool",
      "arguments": {"count": "REF:joined.total"},
      "conditions": [{"param": "REF:join.files.length", "operator": "greater_than", "value": 0}]
    }
  ],
  "response_reference_map": {"total": "REF:join.total", "files": "REF:join.files", "doubled": "REF:report.doubled"}
}
