{
  "description": "Converts an amount between currencies at today's rate",
  "arguments": [
    {
      "name": "amount",
      "type_name": "number",
      "required": true
    },
    {
      "name": "from",
      "type_name": "string",
      "description": "ISO 4217 code",
      "required": true
    },
    {
      "name": "to",
      "type_name": "string",
      "description": "ISO 4217 code",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "amount",
      "type_name": "number",
      "description": "The converted amount, two decimals",
      "required": true
    },
    {
      "name": "currency",
      "type_name": "string",
      "required": true
    },
    {
      "name": "rate",
      "type_name": "number",
      "required": true
    }
  ],
  "system_event_endpoint": "exec:./bin/tool.py convert_currency"
}
