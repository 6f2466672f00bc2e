{
  "description": "Seed example: String References",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "arguments": {
        "text_input": "REF:arguments.user_message",
        "processed_text": "REF:text_processor.cleaned_output"
      }
    }
  ]
}
