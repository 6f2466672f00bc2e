{
  "description": "The most frequent content words of one document, with their counts",
  "arguments": [
    {
      "name": "document_id",
      "type_name": "string",
      "description": "The document's id",
      "required": true
    },
    {
      "name": "top",
      "type_name": "integer",
      "description": "How many keywords",
      "required": false,
      "default": 5,
      "minimum": 1,
      "maximum": 50
    }
  ],
  "responses": [
    {
      "name": "id",
      "type_name": "string",
      "required": true
    },
    {
      "name": "keywords",
      "type_name": "list",
      "description": "{word, count}, most frequent first",
      "required": true
    }
  ],
  "system_event_endpoint": "exec:./bin/tool.py extract_keywords"
}
