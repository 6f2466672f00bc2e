{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"},
     "transform_responses": {"variables": {"sep": ", "}, "transforms": {"listing": "join(array=fils, separator=sep)"}}}
  ]
}
