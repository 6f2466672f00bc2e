{"arguments": [{"name": "level", "type_name": "number", "required": true},
               {"name": "role", "type_name": "string", "required": true}],
 "instructions": [
  {"execution_id": "check", "tool_definition_path": "/tools/t.tool",
   "arguments": {"level": "REF:arguments.level", "role": "REF:arguments.role", "tags": ["a", "urgent"]}},
  {"execution_id": "admin_or_senior", "tool_definition_path": "/tools/t.tool",
   "conditions": [{"logic": "OR", "conditions": [
      {"param": "REF:check.role", "operator": "equals", "value": "admin"},
      {"logic": "AND", "conditions": [
         {"param": "REF:check.level", "operator": "greater_than", "value": 5},
         {"logic": "NOT", "conditions": [{"param": "REF:check.tags", "operator": "contains", "value": "blocked"}]}
      ]}]}],
   "arguments": {"ok": true}},
  {"execution_id": "after", "tool_definition_path": "/tools/t.tool",
   "arguments": {"seen": "REF:admin_or_senior.ok", "whole": "REF:admin_or_senior"}}
]}
