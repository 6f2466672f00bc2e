{
  "description": "Seed example: create_object() Function",
  "instructions": [
    {
      "execution_id": "scanner",
      "tool_definition_path": "/tools/scanner.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "file_list": "REF:scanner.files",
          "process_time": "datetime_now()",
          "total_size": "REF:scanner.total_bytes"
        },
        "transforms": {
          "scan_report": "create_object(files=file_list, scanned_at=process_time, total_size_bytes=total_size, file_count=REF:scanner.files.length)",
          "summary": "create_object(status=\"completed\", message=\"Scan finished successfully\")"
        }
      }
    }
  ]
}
