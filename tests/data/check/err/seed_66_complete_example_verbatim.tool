{
  "description": "Comprehensive document analysis with transforms, parallel processing, and conditional logic",
  "arguments": [
    {
      "name": "document_paths",
      "type_name": "list",
      "description": "List of document file paths to analyze",
      "required": true
    },
    {
      "name": "analysis_depth", 
      "type_name": "string",
      "description": "Level of analysis: basic, detailed, or comprehensive",
      "required": true
    }
  ],
  "instructions": [
    {
      "execution_id": "validate_documents",
      "tool_definition_path": "/tools/document_validator.tool",
      "arguments": {
        "file_paths": "REF:arguments.document_paths"
      },
      "transform_responses": {
        "variables": {
          "validation_results": "REF:response.validation_results"
        },
        "transforms": {
          "valid_count": "sum(array=validation_results, item_path=\"item.is_valid\")",
          "error_summary": "join(array=map(array=validation_results, template=\"item.error_message\"), separator=\"; \")"
        }
      }
    },
    {
      "execution_id": "extract_basic_info",
      "tool_definition_path": "/tools/basic_extractor.tool",
      "parallel_execution": {
        "iterate_over": "REF:validate_documents.valid_documents",
        "child_argument_name": "document_path"
      },
      "transform_responses": {
        "variables": {
          "extraction_results": "REF:response"
        },
        "transforms": {
          "total_pages": "sum(array=extraction_results, item_path=\"item.page_count\")",
          "file_summary": "join(array=map(array=extraction_results, template=\"item.filename\"), separator=\", \")"
        }
      }
    },
    {
      "execution_id": "detailed_analysis",
      "tool_definition_path": "/tools/detailed_analyzer.tool",
      "conditions": [
        {
          "param": "REF:arguments.analysis_depth",
          "operator": "in",
          "value": ["detailed", "comprehensive"]
        }
      ],
      "parallel_execution": {
        "iterate_over": "REF:validate_documents.valid_documents",
        "child_argument_name": "document_path"
      },
      "transform_arguments": {
        "variables": {
          "basic_results": "REF:extract_basic_info.response"
        },
        "transforms": {
          "context_data": "map(array=basic_results, template={file: item.filename, pages: item.page_count})"
        }
      },
      "arguments": {
        "analysis_mode": "REF:arguments.analysis_depth"
      }
    },
    {
      "execution_id": "comprehensive_analysis", 
      "tool_definition_path": "/tools/comprehensive_analyzer.tool",
      "conditions": [
        {"param": "REF:arguments.analysis_depth", "operator": "equals", "value": "comprehensive"}
      ],
      "parallel_execution": {
        "iterate_over": "REF:validate_documents.valid_documents", 
        "child_argument_name": "document_path"
      },
      "transform_arguments": {
        "variables": {
          "detailed_results": "REF:detailed_analysis.response",
          "basic_data": "REF:extract_basic_info.response"
        },
        "transforms": {
          "combined_context": "map(array=detailed_results, template={analysis: item.insights, metadata: item.metadata})",
          "processing_summary": "join(array=map(array=basic_data, template=\"item.summary\"), separator=\"\\n\")"
        }
      }
    },
    {
      "execution_id": "aggregate_results",
      "tool_definition_path": "/tools/result_aggregator.tool",
      "transform_arguments": {
        "variables": {
          "basic_results": "REF:extract_basic_info.response",
          "detailed_results": "REF:detailed_analysis.response", 
          "comprehensive_results": "REF:comprehensive_analysis.response"
        },
        "transforms": {
          "analysis_summary": "map(array=basic_results, template={file: item.filename, status: item.status})",
          "combined_insights": "join(array=map(array=detailed_results, template=\"item.key_findings\"), separator=\"; \")"
        }
      },
      "arguments": {
        "analysis_level": "REF:arguments.analysis_depth",
        "total_documents": "REF:extract_basic_info.response.length"
      },
      "transform_responses": {
        "variables": {
          "aggregated_data": "REF:response.summary"
        },
        "transforms": {
          "completion_report": "join(array=map(array=aggregated_data, template=\"item.description\"), separator=\"\\n\")",
          "success_metrics": "sum(array=aggregated_data, item_path=\"item.success_count\")"
        }
      }
    },
    {
      "execution_id": "generate_report",
      "tool_definition_path": "/tools/report_generator.tool",
      "transform_arguments": {
        "variables": {
          "summary_data": "REF:aggregate_results.summary",
          "document_metrics": "REF:extract_basic_info.response"
        },
        "transforms": {
          "executive_summary": "join(array=map(array=summary_data, template=\"item.key_point\"), separator=\"\\n• \")",
          "document_stats": "map(array=document_metrics, template={name: item.filename, pages: item.page_count})"
        }
      },
      "arguments": {
        "document_count": "REF:extract_basic_info.response.length"
      }
    }
  ],
  "responses": [
    {
      "name": "analysis_report",
      "type_name": "file", 
      "description": "Generated analysis report",
      "required": true
    },
    {
      "name": "document_count",
      "type_name": "number",
      "description": "Number of documents processed",
      "required": true
    },
    {
      "name": "processing_summary",
      "type_name": "object",
      "description": "Summary of processing results with metrics",
      "required": true
    }
  ],
  "response_reference_map": {
    "analysis_report": "REF:generate_report.report_file",
    "document_count": "REF:extract_basic_info.response.length",
    "processing_summary": "REF:aggregate_results.summary"
  }
}
