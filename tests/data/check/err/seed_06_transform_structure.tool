{
  "description": "Seed example: Transform Structure",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "variable_name": "REF:source.data",
          "static_value": "constant"
        },
        "transforms": {
          "new_argument": "function_call(variable_name)"
        }
      },
      "transform_responses": {
        "variables": {
          "result_data": "REF:response.output"
        },
        "transforms": {
          "formatted_result": "process(result_data)"
        }
      }
    }
  ]
}
