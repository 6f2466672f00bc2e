{
  "instructions": [
    {"execution_id": "fetch"}
  ]
}
