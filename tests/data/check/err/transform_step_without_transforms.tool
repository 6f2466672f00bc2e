{
  "description": "An instruction with neither `tool_definition_path` nor `transform_responses` computes nothing: the missing path, with the transform step in the help",
  "instructions": [
    {
      "execution_id": "join",
      "dependencies": []
    }
  ]
}
