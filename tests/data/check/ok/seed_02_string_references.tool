{
  "description": "Seed example: String References",
  "instructions": [
    {
      "execution_id": "text_processor",
      "tool_definition_path": "/tools/text_processor.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "arguments": {
        "text_input": "REF:arguments.user_message",
        "processed_text": "REF:text_processor.cleaned_output"
      }
    }
  ],
  "arguments": [
    {
      "name": "user_message",
      "type_name": "any",
      "required": true
    }
  ]
}
