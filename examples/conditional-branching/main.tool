{
  "description": "Conditional branching with transform logic: valid input is processed, invalid input is reported",
  "arguments": [
    {"name": "user_data", "type_name": "list", "description": "Records: {identifier, data}", "required": true},
    {"name": "mode", "type_name": "string", "description": "How to process valid records", "required": true}
  ],
  "instructions": [
    {
      "execution_id": "validate_input",
      "tool_definition_path": "/tools/validator.tool",
      "arguments": {"data": "REF:arguments.user_data"}
    },
    {
      "execution_id": "process_valid_data",
      "tool_definition_path": "/tools/data_processor.tool",
      "conditions": [
        {"param": "REF:validate_input.is_valid", "operator": "equals", "value": true}
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
        {"param": "REF:validate_input.is_valid", "operator": "equals", "value": false}
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
  "responses": [
    {"name": "status", "type_name": "string", "required": true},
    {"name": "detail", "type_name": "any", "required": false}
  ],
  "response_reference_map": {
    "status": "REF:process_valid_data.status",
    "detail": "REF:handle_invalid_data.message"
  },
  "transform_responses": {
    "variables": {
      "rejected": "REF:handle_invalid_data.status",
      "processed": "REF:process_valid_data.processed"
    },
    "transforms": {
      "status": "default(status, rejected)",
      "detail": "if(detail == null, to_string(processed) + ' record(s) processed', detail)"
    }
  }
}
