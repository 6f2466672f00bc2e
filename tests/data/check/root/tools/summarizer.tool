{
  "description": "Stub for the checker's tests: summarizer",
  "arguments": [
    {
      "name": "average_sentiment",
      "type_name": "number"
    },
    {
      "name": "sentiment_summary",
      "type_name": "string"
    },
    {
      "name": "document_count",
      "type_name": "integer"
    }
  ],
  "responses": [],
  "system_event_endpoint": "builtin:echo"
}
