{
  "responses": [
    {"name": "out", "type_name": "string", "requried": true}
  ],
  "system_event_endpoint": "builtin:echo"
}
