{
  "description": "Declarations written with JSON Schema's words.",
  "arguments": [
    {"name": "query", "type": "string", "minLength": 1, "maxLength": 200},
    {"name": "limit", "type_name": "integer", "min": 1, "max": 50, "defaultValue": 10},
    {"name": "tags", "type_name": "list", "items": {"type": "string"}}
  ],
  "system_event_endpoint": "exec:search"
}
