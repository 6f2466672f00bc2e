{
  "description": "Seed example: Cleanup Tasks",
  "instructions": [
    {
      "execution_id": "error_handler",
      "tool_definition_path": "/tools/error_handler.tool"
    },
    {
      "execution_id": "main_process",
      "tool_definition_path": "/tools/main_process.tool"
    },
    {
      "execution_id": "cleanup",
      "tool_definition_path": "/tools/cleanup.tool",
      "dependencies": [
        "main_process",
        "error_handler"
      ],
      "arguments": {
        "temp_files": "REF:main_process.temporary_files",
        "should_cleanup": true
      }
    }
  ]
}
