{
  "description": "Seed example: sort() Function",
  "instructions": [
    {
      "execution_id": "evaluation",
      "tool_definition_path": "/tools/evaluation.tool"
    },
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "variables": {
          "user_scores": "REF:evaluation.scores"
        },
        "transforms": {
          "sorted_ascending": "sort(array=user_scores, key_path=\"item.score\", direction=\"asc\")",
          "sorted_descending": "sort(array=user_scores, key_path=\"item.priority\", direction=\"desc\")"
        }
      }
    }
  ]
}
