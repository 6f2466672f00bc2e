{
  "description": "Seed example: join() Function",
  "instructions": [
    {
      "execution_id": "metadata",
      "tool_definition_path": "/tools/metadata.tool"
    },
    {
      "execution_id": "scan_results",
      "tool_definition_path": "/tools/scan_results.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "file_list": "REF:scan_results.files",
          "tag_list": "REF:metadata.tags",
          "delimiter": ", "
        },
        "transforms": {
          "file_summary": "join(array=file_list, separator=delimiter)",
          "tag_string": "join(array=tag_list, separator=\" | \")"
        }
      }
    }
  ]
}
