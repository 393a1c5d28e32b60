#!/usr/bin/env python3
"""The harness's own time as a share of each session, over one experiment's records.

    scripts/harness-overhead.py results/<experiment>

Per valid session, from its record: the harness's time is the world reset, the verifier, writing
the record, and the part of the session that was neither the model answering (each answered
turn's latency) nor a tool call (each call's latency) — connecting to the server, listing its
tools, building requests, parsing answers. The share is that over the session's wall time
(reset + session + verify + write).

Only sessions whose records separate the model's time are counted: valid, with no provider retry
and no failed last request. A record times only the attempt that answered each turn, so a failed
attempt (a 5xx, an output the endpoint could not parse) and the wait after it would be counted
as the harness's; those sessions are listed apart.

Prints one line per session and the median and maximum share; exits 1 when there is no record.
"""

import json
import pathlib
import statistics
import sys


def sessions(exp: pathlib.Path):
    for arm in sorted(p for p in exp.iterdir() if p.is_dir()):
        for f in sorted(arm.glob("*.json")):
            yield f, json.loads(f.read_text())


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    exp = pathlib.Path(sys.argv[1])
    rows, apart = [], []
    for path, r in sessions(exp):
        name = f"{path.parent.name}/{path.name}"
        if r.get("validity", {}).get("class") != "valid":
            apart.append((name, "invalid"))
            continue
        if r.get("provider_retries") or r.get("failed_turn"):
            apart.append((name, f"{r.get('provider_retries') or 0} provider retries, failed turn: {'yes' if r.get('failed_turn') else 'no'}"))
            continue
        h = r["harness"]
        model_ms = sum(t["latency_ms"] for t in r["turn_records"])
        tools_ms = sum(c["latency_ms"] for c in r["tool_calls"])
        wall_ms = h["reset_ms"] + h["session_ms"] + h["verify_ms"] + h["write_ms"]
        # Starting the arm's server is the arm's cost, kept apart (absent in older records).
        start_ms = h.get("server_start_ms") or 0.0
        own_ms = h["reset_ms"] + h["verify_ms"] + h["write_ms"] + max(h["session_ms"] - model_ms - tools_ms - start_ms, 0.0)
        rows.append((name, wall_ms, model_ms, tools_ms, own_ms))
    if not rows:
        print(f"no session record under {exp} separates the model's time ({len(apart)} left apart)", file=sys.stderr)
        return 1
    print(f"{'session':60} {'wall s':>8} {'model s':>8} {'tools ms':>9} {'harness ms':>11} {'share':>7}")
    for name, wall, model, tools, own in rows:
        print(f"{name:60} {wall / 1000:8.1f} {model / 1000:8.1f} {tools:9.1f} {own:11.1f} {own / wall:7.3%}")
    shares = [own / wall for _, wall, _, _, own in rows]
    owns = [own for *_, own in rows]
    for name, why in apart:
        print(f"{name:60} left apart: {why}")
    print(
        f"{len(rows)} sessions counted ({len(apart)} left apart): harness p50 {statistics.median(owns):.1f} ms, max {max(owns):.1f} ms; "
        f"share of the session p50 {statistics.median(shares):.3%}, max {max(shares):.3%}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
