{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"},
     "transform_arguments": {"variables": {"now": "datetime_nwo(format=\"iso\")"}, "transforms": {"pattern": "upper(now)"}}}
  ]
}
