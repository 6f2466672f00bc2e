{
  "description": "Document processing pipeline with transforms",
  "arguments": [
    {
      "name": "input_documents",
      "type_name": "list",
      "required": true
    }
  ],
  "instructions": [
    {
      "execution_id": "extract_text",
      "tool_definition_path": "/tools/text_extractor.tool",
      "parallel_execution": {
        "iterate_over": "REF:arguments.input_documents",
        "child_argument_name": "document_path"
      }
    },
    {
      "execution_id": "analyze_sentiment",
      "tool_definition_path": "/tools/sentiment_analyzer.tool",
      "transform_arguments": {
        "variables": {
          "extracted_texts": "REF:extract_text.response"
        },
        "transforms": {
          "combined_texts": "map(array=extracted_texts, template=\"item.content\")"
        }
      },
      "arguments": {
        "text_count": "REF:extract_text.response.length"
      },
      "parallel_execution": {
        "iterate_over": "REF:extract_text.response",
        "child_argument_name": "text_content"
      }
    },
    {
      "execution_id": "generate_summary",
      "tool_definition_path": "/tools/summarizer.tool",
      "transform_arguments": {
        "variables": {
          "sentiment_results": "REF:analyze_sentiment.response"
        },
        "transforms": {
          "average_sentiment": "sum(array=sentiment_results, item_path=\"item.score\")",
          "sentiment_summary": "join(array=map(array=sentiment_results, template=\"item.label\"), separator=\", \")"
        }
      },
      "arguments": {
        "document_count": "REF:extract_text.response.length"
      }
    }
  ]
}
