{
  "description": "Seed example: Transform Error Handling",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "data": "REF:processor.results"
        },
        "transforms": {
          "summary": "join(array=undefined_var, separator=', ')"
        }
      }
    }
  ]
}
