#!/bin/sh
# Runs one fuzz target for a while with the project's settings:
#   fuzz/run.sh <target> [seconds] [libFuzzer flags…]      (default 600 s)
# The structured targets (eval, value_ops) do better with -len_control=0, which lets
# inputs be long from the start.
# Builds with `cargo +nightly fuzz build`, seeds the corpus (seed.sh) the first time,
# uses the dictionary, and stops on the first crash, leaving it in artifacts/<target>/.
# Hangs (more than 10 s for one input) and memory above 2 GB count as crashes. The final
# statistics (executions, time) are at the end of logs/<target>.log.
set -eu
cd "$(dirname "$0")"
target=$1
seconds=${2:-600}
shift $(( $# < 2 ? $# : 2 ))
[ -d corpus/parse ] || ./seed.sh
mkdir -p logs "corpus/$target" "artifacts/$target"
nice -n 10 cargo +nightly fuzz build "$target"
nice -n 19 "target/x86_64-unknown-linux-gnu/release/$target" "corpus/$target" \
    -artifact_prefix="artifacts/$target/" -dict=tdsl.dict -max_total_time="$seconds" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$@" 2>&1 | tee "logs/$target.log" | grep -v '^#' || true
