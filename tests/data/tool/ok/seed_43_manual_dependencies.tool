{
  "description": "Seed example: Manual Dependencies",
  "instructions": [
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
  ]
}
