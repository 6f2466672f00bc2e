#!/bin/sh
# Builds the seed corpora under fuzz/corpus/ from the project's test data:
#   parse, compile  <- tests/data/expr/**/*.tdsl (the expression, header comments dropped)
#                      and the expressions of docs/*.md examples are left to the fuzzer
#   check_tool, run <- tests/data/tool/**/*.tool, tests/data/check/**/*.tool and examples/**/*.tool
# eval and value_ops draw structured inputs from raw bytes and start from nothing.
set -eu
cd "$(dirname "$0")"
mkdir -p corpus/parse corpus/compile corpus/check_tool corpus/eval corpus/value_ops corpus/run
for f in ../tests/data/expr/*/*.tdsl; do
    name=$(basename "$(dirname "$f")")_$(basename "$f" .tdsl)
    grep -v '^# ' "$f" > "corpus/parse/$name"
    cp "corpus/parse/$name" "corpus/compile/$name"
done
for f in ../tests/data/tool/*/*.tool $(find ../tests/data/check ../examples -name '*.tool' 2>/dev/null); do
    name="$(basename "$(dirname "$f")")_$(basename "$f")"
    cp "$f" "corpus/check_tool/$name"
    cp "$f" "corpus/run/$name"
done
echo "seeded: $(ls corpus/parse | wc -l) expressions, $(ls corpus/check_tool | wc -l) tool files"
