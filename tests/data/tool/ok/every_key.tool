{
  "description": "Uses every key of the format at least once",
  "arguments": [
    {"name": "paths", "type_name": "list<string>", "description": "Files", "required": true},
    {"name": "limits", "type_name": "list<list<number>>"},
    {"name": "config", "type_name": "object", "required": false},
    {"name": "report", "type_name": "file"},
    {"name": "anything", "type_name": "any"},
    {"name": "flag", "type_name": "boolean"},
    {"name": "count", "type_name": "integer"},
    {"name": "ratio", "type_name": "number"}
  ],
  "responses": [
    {"name": "summary", "type_name": "string", "required": true},
    {"name": "results", "type_name": "list"}
  ],
  "instructions": [
    {
      "execution_id": "scan",
      "description": "Lists the files to work on",
      "tool_definition_path": "/tools/scanner.tool",
      "arguments": {"roots": "REF:arguments.paths", "options": {"deep": true, "skip": ["REF:arguments.config.skip", null, 1.5]}},
      "retry": {"max_retries": 3, "base_delay_seconds": 0.5, "factor": 2, "max_delay_seconds": 30.0, "jitter": 0.1},
      "timeout_seconds": 12.5,
      "continue_on_error": false
    },
    {
      "execution_id": "process-each",
      "tool_definition_path": "/tools/processor.tool",
      "parallel_execution": {"iterate_over": "REF:scan.files", "child_argument_name": "file"},
      "conditions": [
        {"param": "REF:scan.files.length", "operator": "greater_than_or_equals", "value": 1},
        {"param": "REF:scan.errors", "operator": "not_exists"},
        {
          "logic": "NOT",
          "conditions": [
            {"logic": "OR", "conditions": [
              {"param": "REF:scan.mode", "operator": "ends_with", "value": "_dry"},
              {"param": "REF:scan.size", "operator": "less_than_or_equals", "value": 0}
            ]}
          ]
        }
      ],
      "transform_responses": {
        "variables": {"threshold": 10, "results": "REF:response"},
        "transforms": {"big": "filter(array=results, condition_string=\"item.size > 10\")"}
      },
      "continue_on_error": true
    },
    {
      "execution_id": "summarize",
      "tool_definition_path": "/tools/summarizer.tool",
      "dependencies": ["scan", "process-each"],
      "done_check": [{"param": "REF:arguments.report.path", "operator": "exists"}],
      "done_value": {"summary": "REF:arguments.report.file_name"},
      "transform_arguments": {
        "variables": {"items": ["REF:process-each.response", "literal"]},
        "transforms": {"text": "join(array=items, separator=\", \")"}
      }
    },
    {
      "execution_id": "_quick",
      "tool_definition_path": "/tools/quick.tool",
      "done_check": "REF:summarize.summary != null"
    }
  ],
  "response_reference_map": {
    "summary": "REF:summarize.summary",
    "results": "REF:process-each.response"
  },
  "transform_arguments": {
    "variables": {"first": "REF:arguments.paths.first"},
    "transforms": {"paths": "unique(array=paths)"}
  },
  "transform_responses": {
    "transforms": {"summary": "upper(summary)"}
  }
}
