{
  "description": "Steps written with other formats' words: one error for each, none for the key it stands for.",
  "arguments": [{"name": "url", "type_name": "string"}],
  "instructions": [
    {
      "id": "fetch",
      "tool": "/tools/fetch.tool",
      "args": {"url": "REF:arguments.url"},
      "timeout": 30,
      "retry": {"retries": 2, "delay": 1, "multiplier": 2}
    },
    {
      "execution_id": "each",
      "tool_definition_path": "/tools/summarize.tool",
      "depends_on": ["fetch"],
      "parallel_execution": {"over": "REF:fetch.pages", "as": "page"},
      "conditions": [{"op": "exists", "left": "REF:fetch.pages"}],
      "on_error": true
    }
  ],
  "outputs": {"summaries": "REF:each"}
}
