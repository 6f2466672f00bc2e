{
  "description": "Seed example: Function Call Syntax",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "transforms": {
          "result": "function_name(arg1, arg2)"
        }
      }
    }
  ]
}
