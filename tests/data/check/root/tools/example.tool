{
  "description": "Stub for the checker's tests: example",
  "arguments": [
    {
      "name": "text_input",
      "type_name": "any"
    },
    {
      "name": "processed_text",
      "type_name": "any"
    },
    {
      "name": "all_files",
      "type_name": "any"
    },
    {
      "name": "file_count",
      "type_name": "any"
    },
    {
      "name": "first_file",
      "type_name": "any"
    },
    {
      "name": "last_file",
      "type_name": "any"
    },
    {
      "name": "third_file",
      "type_name": "any"
    },
    {
      "name": "user_data",
      "type_name": "any"
    },
    {
      "name": "user_name",
      "type_name": "any"
    },
    {
      "name": "user_email",
      "type_name": "any"
    },
    {
      "name": "file_content",
      "type_name": "any"
    },
    {
      "name": "file_path",
      "type_name": "any"
    },
    {
      "name": "file_name",
      "type_name": "any"
    },
    {
      "name": "parent_dir",
      "type_name": "any"
    },
    {
      "name": "nested_value",
      "type_name": "any"
    },
    {
      "name": "first_item",
      "type_name": "any"
    },
    {
      "name": "nested_array_item",
      "type_name": "any"
    },
    {
      "name": "parsed_data",
      "type_name": "any"
    },
    {
      "name": "user_info",
      "type_name": "any"
    },
    {
      "name": "extracted_name",
      "type_name": "any"
    },
    {
      "name": "processed_summary",
      "type_name": "any"
    },
    {
      "name": "user_summaries",
      "type_name": "any"
    },
    {
      "name": "file_paths",
      "type_name": "any"
    },
    {
      "name": "extracted_names",
      "type_name": "any"
    },
    {
      "name": "structured_data",
      "type_name": "any"
    },
    {
      "name": "file_summary",
      "type_name": "any"
    },
    {
      "name": "tag_string",
      "type_name": "any"
    },
    {
      "name": "participant_names",
      "type_name": "any"
    },
    {
      "name": "result_message",
      "type_name": "any"
    },
    {
      "name": "priority_level",
      "type_name": "any"
    },
    {
      "name": "active_records",
      "type_name": "any"
    },
    {
      "name": "high_priority",
      "type_name": "any"
    },
    {
      "name": "by_category",
      "type_name": "any"
    },
    {
      "name": "by_status",
      "type_name": "any"
    },
    {
      "name": "sorted_ascending",
      "type_name": "any"
    },
    {
      "name": "sorted_descending",
      "type_name": "any"
    },
    {
      "name": "unique_tags",
      "type_name": "any"
    },
    {
      "name": "distinct_categories",
      "type_name": "any"
    },
    {
      "name": "flattened_data",
      "type_name": "any"
    },
    {
      "name": "created_at",
      "type_name": "any"
    },
    {
      "name": "processing_time",
      "type_name": "any"
    },
    {
      "name": "report_metadata",
      "type_name": "any"
    },
    {
      "name": "user_summary",
      "type_name": "any"
    },
    {
      "name": "metadata",
      "type_name": "any"
    },
    {
      "name": "scan_report",
      "type_name": "any"
    },
    {
      "name": "summary",
      "type_name": "any"
    },
    {
      "name": "python_files",
      "type_name": "any"
    },
    {
      "name": "config_files",
      "type_name": "any"
    },
    {
      "name": "file_history",
      "type_name": "any"
    },
    {
      "name": "file_metadata",
      "type_name": "any"
    },
    {
      "name": "specific_version",
      "type_name": "any"
    },
    {
      "name": "config_content",
      "type_name": "any"
    },
    {
      "name": "previous_version",
      "type_name": "any"
    },
    {
      "name": "file_contents",
      "type_name": "any"
    },
    {
      "name": "high_value_sales",
      "type_name": "any"
    },
    {
      "name": "revenue_total",
      "type_name": "any"
    },
    {
      "name": "user_id",
      "type_name": "any"
    },
    {
      "name": "total_files",
      "type_name": "any"
    },
    {
      "name": "joined_list",
      "type_name": "any"
    },
    {
      "name": "item",
      "type_name": "any"
    },
    {
      "name": "filtered_data",
      "type_name": "any"
    },
    {
      "name": "batch_size",
      "type_name": "any"
    }
  ],
  "responses": [
    {
      "name": "line_items",
      "type_name": "list"
    }
  ],
  "system_event_endpoint": "builtin:echo"
}
