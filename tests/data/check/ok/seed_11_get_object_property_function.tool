{
  "description": "Seed example: get_object_property() Function",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "transforms": {
          "first_item": "get_object_property(obj=data_array, property_path=\"0\")",
          "nested_array_item": "get_object_property(obj=complex_data, property_path=\"results.2.value\")"
        },
        "variables": {
          "data_array": "REF:arguments.data_array",
          "complex_data": "REF:arguments.complex_data"
        }
      }
    }
  ],
  "arguments": [
    {
      "name": "data_array",
      "type_name": "any",
      "required": true
    },
    {
      "name": "complex_data",
      "type_name": "any",
      "required": true
    }
  ]
}
