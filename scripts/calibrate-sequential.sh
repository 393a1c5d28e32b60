#!/usr/bin/env bash
# Re-makes docs/calibration/sequential/ (study.json, README.md): the sequential design
# (`--until-decided`) against an exact null and planted effects, beside peeking at the report
# after every batch and the fixed design as likely to reach the right verdict. 1,000 simulated
# experiments per scenario, a few minutes on 2 cores. Extra arguments go to
# `pipeline calibrate --sequential` (e.g. --experiments 200).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --release -p pipeline -- calibrate --sequential --experiments 1000 --out docs/calibration/sequential "$@"
