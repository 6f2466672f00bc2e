{
  "description": "Declares a `count` it never answers",
  "responses": [{"name": "count", "type_name": "integer", "required": true}],
  "system_event_endpoint": "exec:./bin/liar.sh"
}
