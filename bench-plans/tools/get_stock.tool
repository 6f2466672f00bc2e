{
  "description": "How many units of one product the warehouse holds, and the level at which to reorder",
  "arguments": [
    {
      "name": "sku",
      "type_name": "string",
      "description": "The product's SKU",
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
      "name": "warehouse",
      "type_name": "string",
      "required": true
    },
    {
      "name": "on_hand",
      "type_name": "integer",
      "required": true
    },
    {
      "name": "reorder_level",
      "type_name": "integer",
      "required": true
    }
  ],
  "system_event_endpoint": "exec:./bin/tool.py get_stock"
}
