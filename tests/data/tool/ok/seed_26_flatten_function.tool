{
  "description": "Seed example: flatten() Function",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "nested_results": "REF:parallel_process.response"
        },
        "transforms": {
          "flattened_data": "flatten(array=nested_results)"
        }
      }
    }
  ]
}
