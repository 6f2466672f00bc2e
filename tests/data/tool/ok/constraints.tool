{
  "description": "Every constraint a declaration can carry, each on a type it applies to",
  "arguments": [
    {"name": "mode", "type_name": "string", "enum": ["fast", "slow"], "default": "fast"},
    {"name": "level", "type_name": "integer", "minimum": 1, "maximum": 5, "default": 3},
    {"name": "code", "type_name": "string", "pattern": "^[A-Z]{3}$", "min_length": 3, "max_length": 3},
    {"name": "tags", "type_name": "list", "min_length": 1, "items": {"type_name": "string", "max_length": 10}},
    {"name": "counts", "type_name": "list<integer>", "items": {"minimum": 0}},
    {"name": "anything", "minimum": 0, "pattern": "x"}
  ],
  "responses": [
    {"name": "score", "type_name": "number", "minimum": 0, "maximum": 1}
  ],
  "system_event_endpoint": "builtin:echo"
}
