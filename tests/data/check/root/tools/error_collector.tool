{
  "description": "Stub for the checker's tests: error collector",
  "arguments": [],
  "responses": [
    {
      "name": "error_list",
      "type_name": "list"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
