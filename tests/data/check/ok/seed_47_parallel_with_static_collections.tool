{
  "description": "Seed example: Parallel with Static Collections",
  "instructions": [
    {
      "execution_id": "describe_tool_files",
      "tool_definition_path": "/tools/core/describe_file.tool",
      "parallel_execution": {
        "iterate_over": [
          "/tools/core/bedrock_text.tool",
          "/tools/core/cohere_embedding.tool",
          "/tools/core/math.tool"
        ],
        "child_argument_name": "file_path"
      }
    }
  ]
}
