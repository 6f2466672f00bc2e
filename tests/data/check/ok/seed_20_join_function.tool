{
  "description": "Seed example: join() Function",
  "instructions": [
    {
      "execution_id": "example_step",
      "tool_definition_path": "/tools/example.tool",
      "transform_arguments": {
        "transforms": {
          "participant_names": "join(array=meeting_attendees, separator=\", \")"
        },
        "variables": {
          "meeting_attendees": "REF:arguments.meeting_attendees"
        }
      }
    }
  ],
  "arguments": [
    {
      "name": "meeting_attendees",
      "type_name": "any",
      "required": true
    }
  ]
}
