# Tiny JSON helpers for the example tools, in POSIX sh: enough for the flat objects tdsl
# sends (compact JSON, strings without quotes or backslashes). Source it; the input is in
# $input.

# The string value of a top-level key.
field() {
  printf '%s' "$input" | tr -d '\n' | sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p"
}

# The elements of a top-level list of strings, one per line.
strings() {
  printf '%s' "$input" | tr -d '\n' | sed -n "s/.*\"$1\": *\[\([^]]*\)\].*/\1/p" | tr ',' '\n' |
    sed 's/^ *"//; s/" *$//' | grep -v '^$'
}

# A string escaped for JSON.
esc() {
  printf '%s' "$1" | tr '\t\r\n' '   ' | sed 's/\\/\\\\/g; s/"/\\"/g'
}
