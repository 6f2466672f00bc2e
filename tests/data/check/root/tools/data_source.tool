{
  "description": "Stub for the checker's tests: data source",
  "arguments": [],
  "responses": [
    {
      "name": "records",
      "type_name": "list"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
