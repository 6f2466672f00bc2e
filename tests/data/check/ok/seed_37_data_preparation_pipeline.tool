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
  ],
  "arguments": [
    {
      "name": "analysis_prompt",
      "type_name": "any",
      "required": true
    },
    {
      "name": "file_to_analyze",
      "type_name": "any",
      "required": true
    },
    {
      "name": "model_id",
      "type_name": "any",
      "required": true
    }
  ]
}
