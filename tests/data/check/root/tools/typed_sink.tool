{
  "description": "Takes a required string and a mode from an enum (a callee for the types-from-use cases)",
  "arguments": [
    {"name": "label", "type_name": "string", "required": true},
    {"name": "mode", "type_name": "any", "required": true, "enum": ["fast", "slow"]}
  ],
  "responses": [
    {"name": "done", "type_name": "boolean", "required": true}
  ],
  "system_event_endpoint": "builtin:echo"
}
