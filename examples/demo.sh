#!/bin/sh
# A tour: the source document's "complex data shaping" transforms on real data, then the
# example workflows run with `tdsl run`. Run from the repository root: ./examples/demo.sh
set -eu
tdsl() { cargo run --quiet --release -- "$@"; }
vars=examples/data/orders.json

echo "== high-value sales (pipeline + json_parse + get_object_property + filter + map)"
tdsl eval --vars "$vars" 'pipeline(api_response, [json_parse(json_string=current), get_object_property(obj=current, property_path=sales_path), filter(array=current, condition_string="item.total > threshold"), map(array=current, template={amount: item.total, customer: item.customer_name})])'

echo "== revenue total"
tdsl eval --vars "$vars" 'pipeline(api_response, [json_parse(json_string=current), get_object_property(obj=current, property_path=sales_path), sum(array=current, item_path="item.total")])'

echo "== customers by region, sorted by total"
tdsl eval --vars "$vars" 'pipeline(api_response, [json_parse(current), get_object_property(current, sales_path), sort(array=current, key_path="total", direction="desc"), group_by(array=current, key_path="region"), map(array=keys(current), template=item)])'

echo "== a mistake, caught before anything runs (exit status 1 is expected)"
if tdsl eval --vars "$vars" 'join(array=map(array=sales, template="item.customer_name"), separator=separatr)'; then
  echo "expected a diagnostic" >&2
  exit 1
fi
echo "== the document-analysis workflow (tdsl run)"
tdsl run examples/document-analysis/main.tool --root examples/document-analysis \
  --args examples/document-analysis/args.json --trace target/document-analysis-trace.json
cat target/examples/document-analysis-report.md

echo "== the same run, replayed from its trace with no tool calls"
tdsl replay target/document-analysis-trace.json > /dev/null

echo "== conditional branching: valid input, then invalid input"
tdsl run examples/conditional-branching/main.tool --root examples/conditional-branching \
  --args examples/conditional-branching/valid.json
tdsl run examples/conditional-branching/main.tool --root examples/conditional-branching \
  --args examples/conditional-branching/invalid.json
echo "== composing over MCP: the document-analysis tools, served by a second tdsl"
cargo build --quiet --release
TDSL=target/release/tdsl tdsl check examples/mcp-composition --root examples/mcp-composition --mcp-schemas
TDSL=target/release/tdsl tdsl run examples/mcp-composition/main.tool --root examples/mcp-composition \
  --args examples/mcp-composition/args.json
echo "== done"
