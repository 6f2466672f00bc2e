{
  "description": "Size and readability of one document: words, sentences, words per sentence, pages (40 lines a page), reading time",
  "arguments": [
    {
      "name": "document_id",
      "type_name": "string",
      "description": "The document's id, e.g. `doc-07`",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "id",
      "type_name": "string",
      "required": true
    },
    {
      "name": "title",
      "type_name": "string",
      "required": true
    },
    {
      "name": "words",
      "type_name": "integer",
      "required": true
    },
    {
      "name": "sentences",
      "type_name": "integer",
      "required": true
    },
    {
      "name": "words_per_sentence",
      "type_name": "number",
      "description": "Words divided by sentences, two decimals",
      "required": true
    },
    {
      "name": "pages",
      "type_name": "integer",
      "required": true
    },
    {
      "name": "reading_minutes",
      "type_name": "number",
      "description": "At 230 words a minute",
      "required": true
    }
  ],
  "system_event_endpoint": "exec:./bin/tool.py document_stats"
}
