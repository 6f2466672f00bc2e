{
  "description": "A callee that does not load: it is neither primitive nor composite",
  "arguments": []
}
