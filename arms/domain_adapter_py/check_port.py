"""Checks that server.py is a faithful port of the Rust `domain_adapter` server.

    .venv/bin/python check_port.py BACKEND_URL [--rust-bin ../../target/debug/pipeline] [--tasks-dir DIR]

BACKEND_URL is a running backend (`pipeline backend`), reachable from loopback so that
`POST /admin/reset` answers. The check connects with the MCP Python SDK client to the Rust server
(`pipeline serve domain_adapter --transport stdio --backend-url URL`) and to this folder's server,
then compares

1. the handshake (serverInfo, capabilities) and the tool lists: names, descriptions and input
   schemas as JSON values (a diff is printed), plus the order of the schema keys on the wire;
2. every task's oracle plan, taken as the bench takes it (this folder's oracle/<task>.toml, else
   the plan of the built-in server its arm.toml names in `oracle_from`): the backend is reset to
   the task's world, the plan is replayed through the Rust server (`${var}` placeholders filled
   from `save` JSON pointers into earlier results, exactly as the harness's replay does), the
   backend is reset again and the plan replayed through the Python server; result texts and
   isError are compared byte for byte;
3. a set of probes (argument errors, ambiguous and unknown references, backend errors), compared
   the same way.

A difference is "explained" only when it is the wall-clock `created_at`/`updated_at` the backend
stamps on a record written by the call (`now()` differs between the two replays); anything else
makes the exit status 1.
"""

from __future__ import annotations

import argparse
import difflib
import json
import socket
import sys
import tomllib
import urllib.request
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

HERE = Path(__file__).resolve().parent
WRITE_TOOLS = {"open_ticket", "update_ticket"}
VOLATILE = {"created_at", "updated_at"}

# (name, arguments): calls whose results must match too. Read-only or rejected before any write.
PROBES: list[tuple[str, Any]] = [
    ("find_customer", {"customer": "Acme"}),
    ("find_customer", {"customer": "acme logistics"}),
    ("find_customer", {"customer": "  #3 "}),
    ("find_customer", {"customer": "3"}),
    ("find_customer", {"customer": "#999999"}),
    ("find_customer", {"customer": "#-1"}),
    ("find_customer", {"customer": "#99999999999999999999"}),
    ("find_customer", {"customer": "   "}),
    ("find_customer", {"customer": "Umbrella Health"}),
    ("find_customer", {"customer": "Northwind"}),
    ("find_customer", {"customer": "Zz"}),
    ("find_customer", {"customer": "Northwind Tradng Co Limited"}),
    ("find_customer", {"customer": "\u00a0#3\u2003"}),
    ("find_customer", {"customer": "\x1f#3"}),
    ("find_customer", {"customer": "#+3"}),
    ("find_customer", {"customer": "#\u0663"}),
    ("find_customer", {"customer": "#1_0"}),
    ("find_customer", {"customer": "Acme\u3000"}),
    ("find_person", {"person": "Zo\u00eb \u00c9a Health Wen"}),
    ("find_person", {"person": "Wen"}),
    ("find_person", {"person": "Chloe"}),
    ("find_person", {"person": "chloe quist"}),
    ("find_person", {"person": "#6"}),
    ("find_person", {"person": "#0"}),
    ("find_person", {"person": "a"}),
    ("find_person", {"person": "Xavier Qwerty Longname"}),
    ("find_tickets", {}),
    ("find_tickets", {"limit": 3, "offset": 5}),
    ("find_tickets", {"customer": "Redwood Motors", "status": "in_progress"}),
    ("find_tickets", {"assignee": "Wen"}),
    ("find_tickets", {"status": "bogus"}),
    ("find_tickets", {"limit": 0}),
    ("find_tickets", {"limit": 500}),
    ("find_tickets", {"title": "zzzz-nothing"}),
    ("find_tickets", {"priority": "urgent", "status": "open", "limit": 2}),
    ("ticket_details", {"ticket": "#12"}),
    ("ticket_details", {"ticket": "login"}),
    ("ticket_details", {"ticket": "Mobile login fails after the latest release"}),
    ("ticket_details", {"ticket": "zzzqqq"}),
    ("ticket_details", {"ticket": "#100000"}),
    ("update_ticket", {"ticket": "#1"}),
    ("update_ticket", {"ticket": "login", "status": "closed"}),
    ("update_ticket", {"ticket": "#1", "status": "bogus"}),
    ("update_ticket", {"ticket": "#1", "assignee": "Wen"}),
    ("update_ticket", {"ticket": "#1", "customer": "Umbrella Health"}),
    ("open_ticket", {"title": ""}),
    ("open_ticket", {"title": "x", "customer": "Acme"}),
    ("open_ticket", {"title": "x", "priority": "bogus"}),
    # argument errors, as rmcp's serde deserializer words them
    ("find_customer", {}),
    ("find_customer", None),
    ("find_customer", {"customer": None}),
    ("find_customer", {"customer": 5}),
    ("find_customer", {"customer": True}),
    ("find_customer", {"customer": 1.5}),
    ("find_customer", {"customer": []}),
    ("find_customer", {"customer": {}}),
    ("find_customer", {"customer": "x", "bogus": 1}),
    ("find_customer", {"zeta": 1, "customer": 5}),
    ("find_tickets", {"limit": "3"}),
    ("find_tickets", {"limit": 1e2}),
    ("find_tickets", {"limit": 1e16}),
    ("find_tickets", {"limit": 1e-5}),
    ("find_tickets", {"limit": 1.5e-7}),
    ("find_tickets", {"limit": 18446744073709551615}),
    ("find_tickets", {"limit": 99999999999999999999999}),
    ("find_tickets", {"limit": None, "bogus": 2}),
    ("find_tickets", {"limit": 'a"b\\c\n\t\u0001\u00a0é'}),
    ("find_tickets", {"offset": "x\u200b\u0301\u2028\u0085\ud7ff\U0001f600"}),
    ("find_tickets", {"offset": -0.0}),
    ("find_tickets", {"offset": True}),
    ("open_ticket", {"bogus": 1}),
    ("update_ticket", {"bogus": 1, "ticket": 3}),
    ("no_such_tool", {}),
]


def pointer(doc: Any, ptr: str) -> Any:
    """RFC 6901 JSON pointer (serde_json's `Value::pointer`); KeyError when nothing is there."""
    if ptr == "":
        return doc
    if not ptr.startswith("/"):
        raise KeyError(ptr)
    for raw in ptr[1:].split("/"):
        tok = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(doc, dict) and tok in doc:
            doc = doc[tok]
        elif isinstance(doc, list) and tok.isdigit() and (tok == "0" or not tok.startswith("0")) and int(tok) < len(doc):
            doc = doc[int(tok)]
        else:
            raise KeyError(ptr)
    return doc


def value_text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))


def interpolate(text: str, saved: dict[str, Any]) -> str:
    out, rest = [], text
    while "${" in rest:
        start = rest.index("${")
        out.append(rest[:start])
        end = rest.index("}", start)
        out.append(value_text(saved[rest[start + 2 : end]]))
        rest = rest[end + 1 :]
    return "".join(out) + rest


def substitute(v: Any, saved: dict[str, Any]) -> Any:
    if isinstance(v, str):
        if v.startswith("${") and v.endswith("}") and "${" not in v[2:]:
            return saved[v[2:-1]]
        return interpolate(v, saved)
    if isinstance(v, list):
        return [substitute(x, saved) for x in v]
    if isinstance(v, dict):
        return {k: substitute(x, saved) for k, x in v.items()}
    return v


def reset(url: str, seed: int, scale: int) -> None:
    req = urllib.request.Request(
        f"{url}/admin/reset", data=json.dumps({"seed": seed, "scale": scale}).encode(),
        headers={"content-type": "application/json"}, method="POST",
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        r.read()


async def call(session: ClientSession, tool: str, args: Any) -> tuple[str, bool]:
    """The result as the harness reads it (tasks/src/call.rs): text blocks joined by newlines;
    a JSON-RPC error is an error result carrying its message."""
    try:
        r = await session.call_tool(tool, args)
    except MCPError as e:
        return e.message, True
    text = "\n".join(c.text for c in r.content if getattr(c, "type", None) == "text")
    return text, bool(r.is_error)


class Arm:
    def __init__(self, label: str, params: StdioServerParameters):
        self.label, self.params = label, params

    async def run(self, work):
        async with stdio_client(self.params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                return await work(session, init)


async def surface(arm: Arm) -> dict[str, Any]:
    async def work(session: ClientSession, init) -> dict[str, Any]:
        tools = await session.list_tools()
        return {
            "serverInfo": init.server_info.model_dump(by_alias=True, exclude_none=True),
            "capabilities": init.capabilities.model_dump(by_alias=True, exclude_none=True),
            "tools": [t.model_dump(by_alias=True, exclude_none=True) for t in tools.tools],
        }

    return await arm.run(work)


async def replay(arm: Arm, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    async def work(session: ClientSession, init) -> list[dict[str, Any]]:
        saved: dict[str, Any] = {}
        out = []
        for i, step in enumerate(steps, 1):
            args = substitute(step.get("args", {}), saved)
            text, is_error = await call(session, step["tool"], args)
            problem = None
            if is_error != bool(step.get("expect_error", False)):
                problem = f"step {i} ({step['tool']}): isError={is_error}, the plan expects {step.get('expect_error', False)}: {text[:300]}"
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = text
            for var, ptr in step.get("save", {}).items():
                try:
                    saved[var] = pointer(parsed, ptr)
                except KeyError:
                    problem = problem or f"step {i} ({step['tool']}): nothing at {ptr!r} to save as {var}"
            out.append({"tool": step["tool"], "args": args, "text": text, "is_error": is_error, "problem": problem})
            if problem:
                break
        return out

    return await arm.run(work)


async def probe(arm: Arm) -> list[tuple[str, bool]]:
    async def work(session: ClientSession, init) -> list[tuple[str, bool]]:
        return [await call(session, tool, args) for tool, args in PROBES]

    return await arm.run(work)


def explained(tool: str, a: str, b: str) -> bool:
    """Whether `a` and `b` differ only in the wall-clock timestamps of a record just written."""
    if tool not in WRITE_TOOLS:
        return False
    try:
        ja, jb = json.loads(a), json.loads(b)
    except ValueError:
        return False
    if not (isinstance(ja, dict) and isinstance(jb, dict)):
        return False
    mask = lambda d: {k: ("<now>" if k in VOLATILE else v) for k, v in d.items()}
    return mask(ja) == mask(jb)


def json_diff(a: Any, b: Any, la: str, lb: str) -> list[str]:
    ta = json.dumps(a, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    tb = json.dumps(b, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    return list(difflib.unified_diff(ta, tb, la, lb, lineterm=""))


def plans(tasks_dir: Path) -> list[tuple[str, Path]]:
    """(task, plan file) for every task folder: the arm's own plan, else the one it borrows."""
    borrowed = tomllib.loads((HERE / "arm.toml").read_text()).get("oracle_from")
    out = []
    for task in sorted(p.name for p in tasks_dir.iterdir() if (p / "task.md").is_file()):
        own = HERE / "oracle" / f"{task}.toml"
        if own.is_file():
            out.append((task, own))
        elif borrowed:
            out.append((task, tasks_dir / task / "oracle" / f"{borrowed}.toml"))
    return out


def task_world(tasks_dir: Path, task: str) -> tuple[int, int, bool]:
    meta = tasks_dir / task / "meta.toml"
    seed, scale = 42, 1
    if meta.is_file():
        m = tomllib.loads(meta.read_text())
        seed, scale = m.get("seed", seed), m.get("scale", scale)
    return seed, scale, (tasks_dir / task / "seed.sql").is_file()


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("backend_url")
    ap.add_argument("--admin-url", default="http://127.0.0.1:8081",
                    help="the backend's control plane (pipeline backend --admin-port; default 8081), for resets")
    ap.add_argument("--rust-bin", default="../../target/debug/pipeline")
    ap.add_argument("--tasks-dir", default=str(HERE.parent.parent / "tasks" / "domain_adapter"),
                    help="the module's task folders: each task's meta.toml (world seed and scale) and, unless"
                         " this folder has its own, the oracle plan of the server named by oracle_from")
    opts = ap.parse_args()
    url = opts.backend_url.rstrip("/")
    admin = opts.admin_url.rstrip("/")
    tasks_dir = Path(opts.tasks_dir)
    env = {"BACKEND_URL": url}
    rust = Arm("rust", StdioServerParameters(
        command=opts.rust_bin, args=["serve", "domain_adapter", "--transport", "stdio", "--backend-url", url], env=env))
    python = Arm("python", StdioServerParameters(command=str(HERE / ".venv" / "bin" / "python"), args=["server.py"], env=env, cwd=str(HERE)))
    failures: list[str] = []

    # 1. Handshake and tools
    print("== handshake and tool list")
    sr, sp = await surface(rust), await surface(python)
    for key in ("serverInfo", "capabilities"):
        same = sr[key] == sp[key]
        print(f"{key}: {'identical' if same else 'DIFFERENT'}: rust {json.dumps(sr[key])} python {json.dumps(sp[key])}")
        if not same:
            failures.append(f"{key} differs")
    names_r, names_p = [t["name"] for t in sr["tools"]], [t["name"] for t in sp["tools"]]
    print(f"tool names (in listing order): {'identical' if names_r == names_p else 'DIFFERENT'}: {names_r}")
    if names_r != names_p:
        failures.append(f"tool names differ: {names_r} vs {names_p}")
    diff = json_diff(sr["tools"], sp["tools"], "rust tools/list", "python tools/list")
    if diff:
        print("\n".join(diff))
        failures.append("tool definitions differ (diff above)")
    else:
        print("tool definitions (name, description, inputSchema as JSON values, every other field): identical")
    for tr, tp in zip(sr["tools"], sp["tools"]):
        kr, kp = list(tr["inputSchema"]), list(tp["inputSchema"])
        if kr != kp:
            print(f"  note: {tr['name']} inputSchema key order on the wire: rust {kr} / python {kp} (explained: the SDK's wire model)")

    # 2. Oracle plans
    print("\n== oracle plans")
    rows = []
    for task, plan_path in plans(tasks_dir):
        plan = tomllib.loads(plan_path.read_text())
        seed, scale, has_seed_sql = task_world(tasks_dir, task)
        if has_seed_sql:
            failures.append(f"{task}: has a seed.sql, which this check cannot apply over HTTP")
        reset(admin, seed, scale)
        rr = await replay(rust, plan["steps"])
        reset(admin, seed, scale)
        rp = await replay(python, plan["steps"])
        reset(admin, seed, scale)
        ident, notes = True, []
        for i, (a, b) in enumerate(zip(rr, rp), 1):
            for label, r in (("rust", a), ("python", b)):
                if r["problem"]:
                    failures.append(f"{task} [{label}] {r['problem']}")
            if a["text"] == b["text"] and a["is_error"] == b["is_error"] and a["args"] == b["args"]:
                continue
            if a["is_error"] == b["is_error"] and a["args"] == b["args"] and explained(a["tool"], a["text"], b["text"]):
                notes.append(f"step {i}: differs only in created_at/updated_at of the record written (wall clock)")
                continue
            ident = False
            failures.append(f"{task} step {i} ({a['tool']}): results differ\n  rust   ({a['is_error']}): {a['text'][:600]}\n  python ({b['is_error']}): {b['text'][:600]}")
        if len(rr) != len(rp) or len(rr) != len(plan["steps"]):
            ident = False
            failures.append(f"{task}: replays stopped early (rust {len(rr)}, python {len(rp)} of {len(plan['steps'])} steps)")
        bytes_r = sum(len(r["text"].encode()) for r in rr)
        bytes_p = sum(len(r["text"].encode()) for r in rp)
        rows.append((task, len(plan["steps"]), ("y" if ident and not notes else "y*" if ident else "n"), bytes_r, bytes_p, notes))

    w = max(len(r[0]) for r in rows)
    print(f"{'task':<{w}}  calls  identical  bytes rust  bytes python")
    for task, n, ident, br, bp, _ in rows:
        print(f"{task:<{w}}  {n:>5}  {ident:>9}  {br:>10}  {bp:>12}")
    for task, _, _, _, _, notes in rows:
        for n in notes:
            print(f"  y* {task} {n}")

    # 3. Probes
    print("\n== probes")
    reset(admin, 42, 1)
    pr = await probe(rust)
    reset(admin, 42, 1)
    pp = await probe(python)
    reset(admin, 42, 1)
    same_probes = 0
    for (tool, args), a, b in zip(PROBES, pr, pp):
        if a == b:
            same_probes += 1
        else:
            failures.append(f"probe {tool} {json.dumps(args)}: results differ\n  rust   {a}\n  python {b}")
    print(f"{same_probes}/{len(PROBES)} probe results identical (text and isError)")

    # 4. An unreachable backend: the same tool errors.
    print("\n== unreachable backend")
    with socket.socket() as sock:  # a loopback port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    dead_calls = [("find_customer", {"customer": "#3"}), ("find_tickets", {"limit": 1}), ("update_ticket", {"ticket": "x", "status": "open"})]

    async def dead_work(session: ClientSession, init) -> list[tuple[str, bool]]:
        return [await call(session, t, a) for t, a in dead_calls]

    dr = await Arm("rust", rust.params.model_copy(update={"args": rust.params.args[:-1] + [dead], "env": {"BACKEND_URL": dead}})).run(dead_work)
    dp = await Arm("python", python.params.model_copy(update={"env": {"BACKEND_URL": dead}})).run(dead_work)
    for (tool, args), a, b in zip(dead_calls, dr, dp):
        print(f"{tool}: {'identical' if a == b else 'DIFFERENT'}: {a[0]}")
        if a != b:
            failures.append(f"unreachable backend, {tool}: rust {a} / python {b}")

    print()
    if failures:
        print(f"UNEXPLAINED DIFFERENCES ({len(failures)}):")
        for f in failures:
            print(" -", f)
        return 1
    print("no unexplained difference")
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
