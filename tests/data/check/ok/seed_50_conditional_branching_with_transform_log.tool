{
  "description": "Seed example: Conditional Branching with Transform Logic",
  "instructions": [
    {
      "execution_id": "validate_input",
      "tool_definition_path": "/tools/validator.tool",
      "arguments": {
        "data": "REF:arguments.user_data"
      }
    },
    {
      "execution_id": "process_valid_data",
      "tool_definition_path": "/tools/data_processor.tool",
      "conditions": [
        {
          "param": "REF:validate_input.is_valid",
          "operator": "equals",
          "value": true
        }
      ],
      "transform_arguments": {
        "variables": {
          "valid_records": "REF:validate_input.clean_records"
        },
        "transforms": {
          "processed_data": "map(array=valid_records, template={id: item.identifier, value: item.data})"
        }
      },
      "arguments": {
        "processing_mode": "REF:arguments.mode",
        "batch_size": "REF:validate_input.clean_records.length"
      }
    },
    {
      "execution_id": "handle_invalid_data",
      "tool_definition_path": "/tools/error_handler.tool",
      "conditions": [
        {
          "param": "REF:validate_input.is_valid",
          "operator": "equals",
          "value": false
        }
      ],
      "transform_arguments": {
        "variables": {
          "error_details": "REF:validate_input.validation_errors"
        },
        "transforms": {
          "error_summary": "join(array=map(array=error_details, template=\"item.message\"), separator=\"; \")"
        }
      },
      "arguments": {
        "error_count": "REF:validate_input.validation_errors.length"
      }
    }
  ],
  "arguments": [
    {
      "name": "user_data",
      "type_name": "any",
      "required": true
    },
    {
      "name": "mode",
      "type_name": "any",
      "required": true
    }
  ]
}
