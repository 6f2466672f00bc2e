{
  "description": "Stub for the checker's tests: financial data",
  "arguments": [],
  "responses": [
    {
      "name": "transactions",
      "type_name": "list"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
