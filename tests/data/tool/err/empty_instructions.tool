{
  "instructions": []
}
