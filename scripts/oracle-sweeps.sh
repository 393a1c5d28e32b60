#!/usr/bin/env bash
# The oracle sweeps committed under docs/sweeps/: every module over world scale 1, 2, 4, 8 and
# over distractors 0, 10, 50, 200, and each task family over its sizes. The oracle replays its plans, so this spends nothing and the
# curves are the structural floors (estimates; see each level's report, Method).
#
#   scripts/oracle-sweeps.sh [RESULTS_DIR]     # default: results/
#
# Each sweep runs into RESULTS_DIR/<sweep>/ (levels, records, reports), then its sweep.md,
# sweep.json and sweep.svg are copied to docs/sweeps/<sweep>/. A few minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
results=${1:-results}
cargo build -q -p pipeline
pipeline=target/debug/pipeline

run() { # name, flags…
    local name=$1
    shift
    rm -rf "${results:?}/$name"
    mkdir -p "$results"
    "$pipeline" sweep --models oracle --exp-name "$name" --results-dir "$results" "$@" >"$results/$name.log" 2>&1 || { tail -20 "$results/$name.log"; exit 1; }
    mkdir -p "docs/sweeps/$name"
    cp "$results/$name"/sweep.{md,json,svg} "docs/sweeps/$name/"
    echo "docs/sweeps/$name: $(grep -m1 '^\*\*Crossover' "$results/$name/sweep.md")"
}

for module in tool_orchestrator domain_adapter stateful_session proxy_aggregator resource_gateway code_execution; do
    run "${module}_scale" --module "$module" --scale 1,2,4,8
done
# tool_search's factor is the catalogue's size (its tasks' facts are written for world scale 1).
run tool_search_catalogue --module tool_search --catalogue 25,50,100,200,400,800
# Every module over distractors: tools of other servers the client lists beside both arms.
for module in tool_orchestrator domain_adapter stateful_session proxy_aggregator resource_gateway code_execution tool_search; do
    run "${module}_distractors" --module "$module" --distractors 0,10,50,200
done
# One sweep per task family, so a level's figure is that family's instance alone.
run globex_ticket_batch_size --module tool_orchestrator --tasks globex_ticket_batch --size 1,2,4,8
run initech_handover_size --module tool_orchestrator --tasks initech_handover --size 1,2,4,8,16
run review_with_n_comments_size --module stateful_session --tasks review_with_n_comments --size 1,2,4,8,16,32
run quarry_works_timeout_report_size --module code_execution --tasks quarry_works_timeout_report --size 1,4,16,64,256
run quick_facts_size_catalogue100 --module tool_search --tasks quick_facts --size 1,2,3,4,5,6 --catalogue 100
run quick_facts_size_catalogue800 --module tool_search --tasks quick_facts --size 1,2,3,4,5,6 --catalogue 800
# The code-execution module's oracle A/B per task (the scale-1 level's oracle tables), beside its
# sweep: where a program pays and where it does not, task by task.
{
    echo "# code_execution: the oracle A/B per task (world scale 1)"
    echo
    echo "Made by \`scripts/oracle-sweeps.sh\` from \`$results/code_execution_scale/scale1/report.md\`; the full level report is remade there."
    echo
    sed -n '/^## Oracle structural floors/,/^## Provenance/p' "$results/code_execution_scale/scale1/report.md" | sed '$d'
} >docs/sweeps/code_execution_scale/oracle-ab.md
