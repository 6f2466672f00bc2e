{
  "description": "Seed example: flatten() Function",
  "instructions": [
    {
      "execution_id": "parallel_process",
      "tool_definition_path": "/tools/parallel_process.tool",
      "parallel_execution": {
        "iterate_over": [
          [
            "a",
            "b"
          ],
          [
            "c"
          ]
        ],
        "child_argument_name": "batch"
      }
    },
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
