{
  "description": "Seed example: List References",
  "instructions": [
    {
      "execution_id": "file_scanner",
      "tool_definition_path": "/tools/file_scanner.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "arguments": {
        "all_files": "REF:file_scanner.documents",
        "file_count": "REF:file_scanner.documents.length",
        "first_file": "REF:file_scanner.documents.first",
        "last_file": "REF:file_scanner.documents.last",
        "third_file": "REF:file_scanner.documents.2"
      }
    }
  ]
}
