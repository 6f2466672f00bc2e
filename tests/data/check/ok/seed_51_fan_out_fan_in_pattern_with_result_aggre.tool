{
  "description": "Seed example: Fan-out/Fan-in Pattern with Result Aggregation",
  "instructions": [
    {
      "execution_id": "split_data",
      "tool_definition_path": "/tools/data_splitter.tool",
      "arguments": {
        "dataset": "REF:arguments.large_dataset"
      }
    },
    {
      "execution_id": "parallel_analysis",
      "tool_definition_path": "/tools/analyzer.tool",
      "parallel_execution": {
        "iterate_over": "REF:split_data.chunks",
        "child_argument_name": "data_chunk"
      }
    },
    {
      "execution_id": "aggregate_results",
      "tool_definition_path": "/tools/aggregator.tool",
      "transform_arguments": {
        "variables": {
          "analysis_results": "REF:parallel_analysis.response"
        },
        "transforms": {
          "successful_analyses": "sum(array=map(array=analysis_results, template=\"item.success_flag\"), item_path=\"item.value\")",
          "combined_metrics": "sum(array=analysis_results, item_path=\"item.metric_value\")"
        }
      },
      "arguments": {
        "total_chunks": "REF:split_data.chunks.length"
      },
      "transform_responses": {
        "variables": {
          "final_summary": "REF:response.aggregated_data"
        },
        "transforms": {
          "completion_percentage": "sum(array=final_summary, item_path=\"item.completion_rate\")",
          "summary_report": "join(array=map(array=final_summary, template=\"item.description\"), separator=\"\\n\")"
        }
      }
    }
  ],
  "arguments": [
    {
      "name": "large_dataset",
      "type_name": "any",
      "required": true
    }
  ]
}
