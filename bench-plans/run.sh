#!/usr/bin/env bash
# Runs the suite both ways (direct tool calling, one run_plan) and writes results.md.
#
#   ./run.sh      # the plan tools, guide and tdsl://tools of the tdsl library it builds with
#   cargo test    # the same answer both ways, for every task
#
# Needs python3 (the tools are exec: Python programs over data/). Builds in debug: nothing
# is timed, only tokens and round trips are counted. CARGO_TARGET_DIR defaults to the main
# crate's target/, to share its built dependencies.
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$(pwd)/../target}"
command -v python3 >/dev/null || { echo "run.sh: python3 is needed (the tools are Python programs)" >&2; exit 1; }
nice -n 10 cargo build --quiet --bin bench-plans
BENCH_COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$CARGO_TARGET_DIR/debug/bench-plans" results.md
