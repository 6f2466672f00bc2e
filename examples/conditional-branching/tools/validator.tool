{
  "description": "Splits records into clean ones and validation errors; a composite tool whose work is all transforms",
  "arguments": [
    {"name": "data", "type_name": "list", "description": "Records: {identifier, data}", "required": true}
  ],
  "instructions": [
    {
      "execution_id": "inspect",
      "tool_definition_path": "/tools/echo.tool",
      "arguments": {"records": "REF:arguments.data"},
      "transform_responses": {
        "transforms": {
          "clean_records": "filter(array=records, condition_string=\"item.identifier != null and item.data != null\")",
          "validation_errors": "map(array=filter(array=records, condition_string=\"item.identifier == null or item.data == null\"), template={message: if(item.identifier == null, 'a record has no identifier', 'record ' + item.identifier + ' has no data')})",
          "is_valid": "length(validation_errors) == 0"
        }
      }
    }
  ],
  "responses": [
    {"name": "is_valid", "type_name": "boolean", "required": true},
    {"name": "clean_records", "type_name": "list", "required": true},
    {"name": "validation_errors", "type_name": "list", "required": true}
  ],
  "response_reference_map": {
    "is_valid": "REF:inspect.is_valid",
    "clean_records": "REF:inspect.clean_records",
    "validation_errors": "REF:inspect.validation_errors"
  }
}
