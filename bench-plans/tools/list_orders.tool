{
  "description": "The shop's orders, optionally of one region",
  "arguments": [
    {
      "name": "region",
      "type_name": "string",
      "description": "north, south, east or west; all regions when absent",
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
      "name": "orders",
      "type_name": "list",
      "description": "One {order_id, customer_id, sku, quantity, region, date} per order",
      "required": true
    }
  ],
  "system_event_endpoint": "exec:./bin/tool.py list_orders"
}
