{
  "description": "Stub for the checker's tests: data fetcher",
  "arguments": [],
  "responses": [
    {
      "name": "results",
      "type_name": "list"
    },
    {
      "name": "raw_response",
      "type_name": "string"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
