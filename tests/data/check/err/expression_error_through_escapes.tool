{
  "instructions": [
    {"execution_id": "scan", "tool_definition_path": "/tools/lister.tool", "arguments": {"directory": "/data"},
     "transform_responses": {"transforms": {"listing": "join(array=files, separator=\"caf\u00e9 \\q\") + totl"}}}
  ]
}
