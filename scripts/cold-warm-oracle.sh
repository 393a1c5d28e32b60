#!/usr/bin/env bash
# The oracle's cold-vs-warm comparison of every module (docs/cold-warm/): both session modes of
# the whole suite, k = 2 (so each warm conversation is met in two orders), then
# `aggregate --compare COLD WARM --along session_mode`. Spends nothing: the oracle replays plans.
set -euo pipefail
cd "$(dirname "$0")/.."
results=${RESULTS:-results}
pipeline=${PIPELINE:-target/debug/pipeline}
cargo build -q -p pipeline
mkdir -p "$results"
for mode in cold warm; do
    rm -rf "${results:?}/oracle_all_$mode"
    "$pipeline" --all --models oracle --k 2 --session-mode "$mode" --exp-name "oracle_all_$mode" --results-dir "$results" >"$results/oracle_all_$mode.log" 2>&1 \
        || { tail -20 "$results/oracle_all_$mode.log"; exit 1; }
done
rm -f docs/cold-warm/compare.md docs/cold-warm/compare.json docs/cold-warm/order-effects.md
mkdir -p docs/cold-warm
"$pipeline" aggregate --compare oracle_all_cold oracle_all_warm --results-dir "$results" --along session_mode --out docs/cold-warm >/dev/null
# The order effects of the warm run: its own report's section.
"$pipeline" aggregate --result-dir "$results/oracle_all_warm" >/dev/null
sed -n '/^## Order effects/,/^## /p' "$results/oracle_all_warm/report.md" | sed '$d' >docs/cold-warm/order-effects.md
rm -f docs/cold-warm/compare.html
echo "docs/cold-warm: $(grep -c '^| .* · oracle' docs/cold-warm/compare.md) gap rows"
