{
  "description": "Seed example: Automatic Dependency Resolution",
  "instructions": [
    {
      "execution_id": "fetch_data",
      "tool_definition_path": "/tools/api_client.tool",
      "arguments": {
        "endpoint": "REF:arguments.api_endpoint"
      }
    },
    {
      "execution_id": "process_data",
      "tool_definition_path": "/tools/data_processor.tool",
      "arguments": {
        "raw_data": "REF:fetch_data.response_data"
      }
    },
    {
      "execution_id": "generate_report",
      "tool_definition_path": "/tools/report_generator.tool",
      "arguments": {
        "processed_data": "REF:process_data.cleaned_data",
        "metadata": "REF:fetch_data.metadata"
      }
    }
  ],
  "arguments": [
    {
      "name": "api_endpoint",
      "type_name": "any",
      "required": true
    }
  ]
}
