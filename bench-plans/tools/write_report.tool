{
  "description": "Files a report with a title and lines of text; answers its id",
  "arguments": [
    {
      "name": "title",
      "type_name": "string",
      "required": true
    },
    {
      "name": "lines",
      "type_name": "list<string>",
      "description": "The report's lines",
      "required": true
    }
  ],
  "responses": [
    {
      "name": "report_id",
      "type_name": "string",
      "required": true
    },
    {
      "name": "title",
      "type_name": "string",
      "required": true
    },
    {
      "name": "line_count",
      "type_name": "integer",
      "required": true
    }
  ],
  "system_event_endpoint": "exec:./bin/tool.py write_report"
}
