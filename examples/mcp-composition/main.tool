{
  "description": "Word counts of the readable documents, with tools another tdsl serves over MCP",
  "arguments": [
    {"name": "document_paths", "type_name": "list<string>", "description": "Documents to count", "required": true}
  ],
  "instructions": [
    {
      "execution_id": "validate",
      "tool_definition_path": "/remote/validator.tool",
      "arguments": {"file_paths": "REF:arguments.document_paths"},
      "transform_responses": {
        "transforms": {
          "valid_documents": "REF:response.valid_documents",
          "skipped": "count(array=REF:response.validation_results, condition_string=\"not item.is_valid\")"
        }
      }
    },
    {
      "execution_id": "extract",
      "tool_definition_path": "/remote/extractor.tool",
      "parallel_execution": {"iterate_over": "REF:validate.valid_documents", "child_argument_name": "document_path"},
      "transform_responses": {
        "transforms": {
          "documents": "map(array=REF:response, template={name: item.filename, words: item.word_count})",
          "total_words": "sum(array=REF:response, item_path=\"item.word_count\")"
        }
      }
    }
  ],
  "responses": [
    {"name": "documents", "type_name": "list", "description": "{name, words} per readable document", "required": true},
    {"name": "total_words", "type_name": "integer", "required": true},
    {"name": "skipped", "type_name": "integer", "description": "Documents that could not be read", "required": true}
  ],
  "response_reference_map": {
    "documents": "REF:extract.documents",
    "total_words": "REF:extract.total_words",
    "skipped": "REF:validate.skipped"
  }
}
