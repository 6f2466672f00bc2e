{
  "description": "The current unit price of one product",
  "arguments": [
    {
      "name": "sku",
      "type_name": "string",
      "description": "The product's SKU, e.g. `SKU-204`",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "sku",
      "type_name": "string",
      "required": true
    },
    {
      "name": "name",
      "type_name": "string",
      "required": true
    },
    {
      "name": "unit_price",
      "type_name": "number",
      "required": true
    },
    {
      "name": "currency",
      "type_name": "string",
      "description": "ISO 4217 code",
      "required": true
    }
  ],
  "system_event_endpoint": "exec:./bin/tool.py get_price"
}
