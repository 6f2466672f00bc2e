{
  "description": "Document analysis: validate, extract in parallel, analyse in more depth when asked, aggregate, report",
  "arguments": [
    {"name": "document_paths", "type_name": "list<string>", "description": "Documents to analyse", "required": true},
    {"name": "analysis_depth", "type_name": "string", "description": "basic, detailed or comprehensive", "required": true},
    {"name": "report_path", "type_name": "string", "description": "Where to write the report", "required": true}
  ],
  "instructions": [
    {
      "execution_id": "validate_documents",
      "tool_definition_path": "/tools/document_validator.tool",
      "arguments": {"file_paths": "REF:arguments.document_paths"},
      "transform_responses": {
        "variables": {"validation_results": "REF:response.validation_results"},
        "transforms": {
          "valid_count": "sum(array=validation_results, item_path=\"item.is_valid\")",
          "error_summary": "join(array=filter(array=map(array=validation_results, template=\"item.error_message\"), condition_string=\"item != null\"), separator=\"; \")"
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
        "variables": {"extraction_results": "REF:response"},
        "transforms": {
          "total_pages": "sum(array=extraction_results, item_path=\"item.page_count\")",
          "total_words": "sum(array=extraction_results, item_path=\"item.word_count\")",
          "file_summary": "join(array=map(array=extraction_results, template=\"item.filename\"), separator=\", \")"
        }
      }
    },
    {
      "execution_id": "detailed_analysis",
      "tool_definition_path": "/tools/detailed_analyzer.tool",
      "conditions": [
        {"param": "REF:arguments.analysis_depth", "operator": "in", "value": ["detailed", "comprehensive"]}
      ],
      "parallel_execution": {
        "iterate_over": "REF:validate_documents.valid_documents",
        "child_argument_name": "document_path"
      },
      "transform_arguments": {
        "variables": {"basic_results": "REF:extract_basic_info.response"},
        "transforms": {
          "context_data": "map(array=basic_results, template={file: item.filename, pages: item.page_count})"
        }
      },
      "arguments": {"analysis_mode": "REF:arguments.analysis_depth"}
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
          "analysis_summary": "map(array=basic_results, template={file: item.filename, status: item.status, pages: item.page_count})",
          "combined_insights": "join(array=map(array=detailed_results, template=\"item.key_findings\"), separator=\"; \")",
          "assessments": "map(array=comprehensive_results, template=\"item.assessment\")"
        }
      },
      "arguments": {
        "analysis_level": "REF:arguments.analysis_depth",
        "total_documents": "REF:extract_basic_info.response.length"
      },
      "transform_responses": {
        "transforms": {
          "summary": "create_object(level=analysis_level, documents=total_documents, pages=sum(array=analysis_summary, item_path=\"pages\"), files=analysis_summary, insights=combined_insights, assessments=assessments)"
        }
      }
    },
    {
      "execution_id": "generate_report",
      "tool_definition_path": "/tools/report_generator.tool",
      "transform_arguments": {
        "variables": {
          "summary_data": "REF:aggregate_results.summary",
          "rejected": "REF:validate_documents.error_summary"
        },
        "transforms": {
          "executive_summary": "join(array=map(array=summary_data.files, template=item.file + ' (' + to_string(item.pages) + ' page)'), separator=\"\\n- \")",
          "report_text": "join(array=[\"# Document analysis (\" + summary_data.level + \")\", \"\", \"- \" + executive_summary, \"\", if(summary_data.insights == \"\", \"No detailed analysis.\", \"Key findings: \" + summary_data.insights), if(length(summary_data.assessments) == 0, \"\", \"Reading: \" + join(array=summary_data.assessments, separator=\"; \")), if(rejected == \"\", \"\", \"Rejected: \" + rejected)], separator=\"\\n\")"
        }
      },
      "arguments": {
        "report_path": "REF:arguments.report_path",
        "document_count": "REF:extract_basic_info.response.length"
      }
    }
  ],
  "responses": [
    {"name": "analysis_report", "type_name": "file", "description": "The report written", "required": true},
    {"name": "document_count", "type_name": "number", "description": "Documents analysed", "required": true},
    {"name": "processing_summary", "type_name": "object", "description": "What was found, with metrics", "required": true},
    {"name": "rejected", "type_name": "string", "description": "Why documents were left out", "required": false}
  ],
  "response_reference_map": {
    "analysis_report": "REF:generate_report.report_file",
    "document_count": "REF:extract_basic_info.response.length",
    "processing_summary": "REF:aggregate_results.summary",
    "rejected": "REF:validate_documents.error_summary"
  }
}
