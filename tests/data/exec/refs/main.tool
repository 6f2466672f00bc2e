{"arguments": [{"name": "files", "type_name": "list", "required": true}],
 "instructions": [
  {"execution_id": "scan", "tool_definition_path": "/tools/t.tool",
   "arguments": {"files": "REF:arguments.files", "meta": {"count": 2}}},
  {"execution_id": "use", "tool_definition_path": "/tools/t.tool",
   "arguments": {"deep": {"list": ["REF:scan.files.first", {"n": "REF:scan.files.length"}],
                          "name": "REF:scan.files.1.file_name", "dir": "REF:scan.files.1.parent_directory",
                          "count": "REF:scan.meta.count", "missing": "REF:scan.nothing.here"},
                 "text": "see REF:scan.files"}}
]}
