{
  "description": "A transform step may have conditions, dependencies, a description and an expected_key (SPEC §6.4 ext); REFs read its outputs, typed",
  "arguments": [
    {"name": "directory", "type_name": "string", "required": true}
  ],
  "instructions": [
    {
      "execution_id": "scan",
      "tool_definition_path": "/tools/lister.tool",
      "arguments": {"directory": "REF:arguments.directory"}
    },
    {
      "execution_id": "summary",
      "description": "Counts the files, once the scan found any",
      "dependencies": ["scan"],
      "conditions": [{"param": "REF:scan.total", "operator": "greater_than", "value": 0}],
      "transform_responses": {
        "transforms": {
          "count": "REF:scan.files.length",
          "first": "REF:scan.files.first"
        }
      }
    },
    {
      "execution_id": "double",
      "tool_definition_path": "/tools/counter.tool",
      "arguments": {"count": "REF:summary.count"}
    }
  ],
  "response_reference_map": {"doubled": "REF:double.doubled", "first": "REF:summary.first"}
}
