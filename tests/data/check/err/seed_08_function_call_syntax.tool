{
  "description": "Seed example: Function Call Syntax",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "transforms": {
          "result": "function_name(param1=arg1, param2=arg2)"
        }
      }
    }
  ]
}
