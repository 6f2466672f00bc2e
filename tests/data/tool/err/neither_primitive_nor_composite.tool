{
  "description": "does nothing"
}
