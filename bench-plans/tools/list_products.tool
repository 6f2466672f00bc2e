{
  "description": "The shop's products, optionally of one category",
  "arguments": [
    {
      "name": "category",
      "type_name": "string",
      "description": "furniture, electronics, accessories or stationery; all when absent",
      "required": false
    }
  ],
  "responses": [
    {
      "name": "count",
      "type_name": "integer",
      "required": true
    },
    {
      "name": "products",
      "type_name": "list",
      "description": "One {sku, name, category} per product",
      "required": true
    }
  ],
  "system_event_endpoint": "exec:./bin/tool.py list_products"
}
