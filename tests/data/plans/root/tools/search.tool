{
  "description": "Searches the web: the best pages for a query",
  "arguments": [
    {"name": "query", "type_name": "string", "description": "What to search for", "required": true},
    {"name": "limit", "type_name": "integer", "description": "At most this many results (3 by default)", "required": false, "minimum": 1, "maximum": 10}
  ],
  "responses": [
    {"name": "results", "type_name": "list", "description": "One {title, url} per page", "required": true},
    {"name": "total", "type_name": "integer", "required": true}
  ],
  "system_event_endpoint": "exec:./bin/search.sh"
}
