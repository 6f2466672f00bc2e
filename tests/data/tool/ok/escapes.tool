{
  "description": "Strings with escapes: \"quoted\", tab\t, \u00e9, and \ud83d\ude00",
  "instructions": [
    {
      "execution_id": "step",
      "tool_definition_path": "/tools/echo.tool",
      "arguments": {"quoted": "REF:\u0073tep_0.value", "plain": "caf\u00e9 \"REF:x\""},
      "transform_arguments": {
        "variables": {"sep": "\n\t", "name": "REF:arguments.\u006eame"},
        "transforms": {"label": "join(array=[\"a\\\"b\", name], separator=sep)"}
      }
    }
  ]
}
