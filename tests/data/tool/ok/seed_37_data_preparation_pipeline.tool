{
  "description": "Seed example: Data Preparation Pipeline",
  "instructions": [
    {
      "execution_id": "analyze_with_llm",
      "tool_definition_path": "/tools/core/bedrock_text.tool",
      "transform_arguments": {
        "variables": {
          "prompt_parts": [
            "REF:arguments.analysis_prompt",
            "REF:arguments.file_to_analyze"
          ],
          "separator": "\n\n"
        },
        "transforms": {
          "prompt": "join(array=prompt_parts, separator=separator)"
        }
      },
      "arguments": {
        "model_id": "REF:arguments.model_id"
      }
    }
  ]
}
