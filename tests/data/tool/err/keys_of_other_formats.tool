{
  "name": "summarize",
  "description": "A tool written as MCP and workflow engines write theirs: each foreign key is one error naming the rename, with no second error for the key it stands for.",
  "input_schema": {"type": "object", "properties": {"url": {"type": "string"}}},
  "steps": []
}
