#!/usr/bin/env bash
# Re-makes docs/calibration/ (study.json, README.md, calibration.svg) from the committed
# scenarios in aggregate/calibration/: 1,000 simulated experiments (and their twins) per scenario
# and design, about a minute on 2 cores. Reports read their flip rates from study.json, so
# rebuild after running this. Extra arguments go to `pipeline calibrate` (e.g. --experiments 200).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet -p pipeline -- calibrate --experiments 1000 --out docs/calibration "$@"
