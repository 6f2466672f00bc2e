{
  "description": "One customer's record",
  "arguments": [
    {
      "name": "customer_id",
      "type_name": "string",
      "description": "The customer's id, e.g. `C-104`",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "customer_id",
      "type_name": "string",
      "required": true
    },
    {
      "name": "name",
      "type_name": "string",
      "required": true
    },
    {
      "name": "tier",
      "type_name": "string",
      "description": "gold, silver or bronze",
      "required": true
    },
    {
      "name": "country",
      "type_name": "string",
      "required": true
    },
    {
      "name": "email",
      "type_name": "string",
      "required": true
    },
    {
      "name": "since",
      "type_name": "string",
      "description": "Customer since (date)",
      "required": true
    }
  ],
  "system_event_endpoint": "exec:./bin/tool.py get_customer"
}
