{
  "description": "Seed example: Manual Dependencies",
  "instructions": [
    {
      "execution_id": "process_data",
      "tool_definition_path": "/tools/process_data.tool"
    },
    {
      "execution_id": "fetch_data",
      "tool_definition_path": "/tools/fetch_data.tool"
    },
    {
      "execution_id": "cleanup_task",
      "tool_definition_path": "/tools/cleanup.tool",
      "dependencies": [
        "fetch_data",
        "process_data"
      ],
      "arguments": {
        "working_directory": "REF:arguments.temp_dir"
      }
    }
  ],
  "arguments": [
    {
      "name": "temp_dir",
      "type_name": "any",
      "required": true
    }
  ]
}
