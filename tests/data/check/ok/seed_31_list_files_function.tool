{
  "description": "Seed example: list_files() Function",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "workspace_dir": "REF:arguments.workspace_path"
        },
        "transforms": {
          "all_files": "list_files(directory_path=workspace_dir)",
          "python_files": "list_files(directory_path=workspace_dir, pattern=\"*.py\")",
          "config_files": "list_files(directory_path=\"/config\", pattern=\"*.json\")"
        }
      }
    }
  ],
  "arguments": [
    {
      "name": "workspace_path",
      "type_name": "any",
      "required": true
    }
  ]
}
