{
  "description": "Fetches a company's revenue; its result is known as `revenue_data` in the steps that call it (seed 002's output_key)",
  "arguments": [
    {"name": "ticker", "type_name": "string", "required": true}
  ],
  "responses": [
    {"name": "total", "type_name": "number", "required": true},
    {"name": "currency", "type_name": "string", "required": true}
  ],
  "output_key": "revenue_data",
  "system_event_endpoint": "builtin:echo"
}
