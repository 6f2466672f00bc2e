{
  "description": "Stub for the checker's tests: result aggregator",
  "arguments": [
    {
      "name": "analysis_summary",
      "type_name": "list"
    },
    {
      "name": "combined_insights",
      "type_name": "string"
    },
    {
      "name": "analysis_level",
      "type_name": "string",
      "required": true
    },
    {
      "name": "total_documents",
      "type_name": "integer"
    }
  ],
  "responses": [
    {
      "name": "summary",
      "type_name": "any",
      "required": true,
      "description": "The complete example reads it as a list (map over it) and maps it to an `object` response, so it is left `any`"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
