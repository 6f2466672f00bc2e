{
  "description": "The documents in a folder of the document library: id, title and format of each",
  "arguments": [
    {
      "name": "folder",
      "type_name": "string",
      "description": "The folder, e.g. `reports`",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "folder",
      "type_name": "string",
      "required": true
    },
    {
      "name": "count",
      "type_name": "integer",
      "description": "How many documents",
      "required": true
    },
    {
      "name": "documents",
      "type_name": "list",
      "description": "One {id, title, format} per document",
      "required": true
    }
  ],
  "system_event_endpoint": "exec:./bin/tool.py list_documents"
}
