#!/usr/bin/env node
// Proves the TypeScript port faithful: drives the Rust `resource_gateway` server (over stdio)
// and this folder's server (over Streamable HTTP, started as arm.toml says, with an empty
// environment but BACKEND_URL and PORT) with the official MCP TypeScript SDK client, and
// compares what they answer.
//
//   node check_port.mjs [--backend-url URL] [--rust-bin PATH] [--tasks-dir DIR] [--skip-timeout]
//
// defaults: --backend-url http://127.0.0.1:8080, --rust-bin ../../target/debug/pipeline,
// --tasks-dir ../../tasks/resource_gateway.
//
// 1. The real backend: initialize result (protocol version, capabilities, server info,
//    instructions), tools, resource templates, resource list (every field), a set of probes
//    (unknown URIs, malformed URIs, unknown methods, tools/call), then every task's oracle plan
//    as the bench takes it (this folder's oracle/<task>.toml, else the plan of the built-in
//    server arm.toml names in `oracle_from`, in the task's folder under --tasks-dir): reset the
//    backend, replay through Rust; reset, replay through the port;
//    compare each call's text (as the agent shows it to a model), error flag and raw JSON-RPC
//    result or error.
// 2. A fake backend (in this process) for what the seeded world cannot show: pagination, a
//    service without runbooks, records of the wrong shape, 4xx/5xx answers, a body that is not
//    JSON, a backend that never answers (10 s; --skip-timeout skips it), an unreachable backend.
// 3. No output may contain a runbook's internal notes.
//
// Exits 1 on any difference not listed in EXPLAINED below.

import { spawn } from "node:child_process";
import { readFileSync, readdirSync, existsSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { parse as parseToml } from "smol-toml";
import * as z from "zod/v4";

const HERE = path.dirname(fileURLToPath(import.meta.url));

// Differences that are known and explained in README.md: none of what this script compares.
const EXPLAINED = [];

// ---------------------------------------------------------------------------------------------
// Arguments

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}
const BACKEND_URL = arg("--backend-url", "http://127.0.0.1:8080").replace(/\/+$/, "");
// The backend's control plane (pipeline backend --admin-port), for resets: never the API's port.
const ADMIN_URL = arg("--admin-url", "http://127.0.0.1:8081").replace(/\/+$/, "");
const RUST_BIN = arg("--rust-bin", "../../target/debug/pipeline");
const TASKS_DIR = path.resolve(arg("--tasks-dir", path.join(HERE, "..", "..", "tasks", "resource_gateway")));
const SKIP_TIMEOUT = process.argv.includes("--skip-timeout");

let failures = 0;
function fail(what) {
  failures++;
  console.log(`DIFF ${what}`);
}

// ---------------------------------------------------------------------------------------------
// Starting and connecting

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** A bare program name resolved with this process's PATH, as the harness does. */
function resolveProgram(program) {
  if (program.includes("/")) return path.resolve(HERE, program);
  for (const dir of (process.env.PATH ?? "").split(":")) {
    const p = path.join(dir, program);
    if (dir && existsSync(p)) return p;
  }
  throw new Error(`${program} is not on PATH`);
}

/** Wraps `transport` so every message it receives is kept (raw JSON-RPC answers by id). */
function recording(transport) {
  const raw = new Map();
  let handler;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => handler,
    set: (fn) => {
      handler = fn
        ? (msg, extra) => {
            if (msg && msg.id !== undefined && (msg.result !== undefined || msg.error !== undefined)) raw.set(msg.id, msg);
            fn(msg, extra);
          }
        : fn;
    },
  });
  return raw;
}

async function connectRust(backendUrl) {
  const transport = new StdioClientTransport({
    command: RUST_BIN,
    args: ["serve", "resource_gateway", "--transport", "stdio", "--backend-url", backendUrl],
    stderr: "ignore",
  });
  const raw = recording(transport);
  const client = new Client({ name: "check_port", version: "0.1.0" });
  await client.connect(transport);
  return { label: "rust", client, raw, transport, close: async () => client.close() };
}

/** Starts this folder's server exactly as arm.toml says and connects over Streamable HTTP. */
async function connectTs(backendUrl) {
  const arm = parseToml(readFileSync(path.join(HERE, "arm.toml"), "utf8"));
  const port = await freePort();
  const fill = (s) => s.replaceAll("{backend_url}", backendUrl).replaceAll("{port}", String(port));
  const [program, ...args] = arm.serve.command.map(fill);
  const env = Object.fromEntries(Object.entries(arm.env).map(([k, v]) => [k, fill(v)]));
  const child = spawn(resolveProgram(program), args, { cwd: HERE, env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  let stdout = "";
  child.stderr.on("data", (d) => (stderr += d));
  child.stdout.on("data", (d) => (stdout += d));
  const url = `http://127.0.0.1:${port}${arm.serve.path}`;
  const deadline = Date.now() + 20000;
  for (;;) {
    const up = await new Promise((resolve) => {
      const s = net.connect(port, "127.0.0.1", () => (s.end(), resolve(true)));
      s.on("error", () => resolve(false));
    });
    if (up) break;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the TS server did not start: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const raw = recording(transport);
  const client = new Client({ name: "check_port", version: "0.1.0" });
  await client.connect(transport);
  return {
    label: "ts",
    client,
    raw,
    transport,
    url,
    port,
    stdout: () => stdout,
    close: async () => {
      await transport.terminateSession();
      await client.close();
      child.kill("SIGTERM");
      await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
      if (stdout !== "") fail(`the TS server wrote to stdout (it must log to stderr only): ${stdout.slice(0, 200)}`);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Calls, and their text as the agent shows it (tasks/src/call.rs)

/** serde_json's compact form of a `json!` map: keys sorted (no `preserve_order`). */
function rustJson(v) {
  if (Array.isArray(v)) return `[${v.map(rustJson).join(",")}]`;
  if (v && typeof v === "object") {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${rustJson(v[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

function errorOutcome(e, raw, id) {
  if (e && typeof e.code === "number") {
    const prefix = `MCP error ${e.code}: `;
    const text = e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message;
    return { text, isError: true, raw: raw.get(id) ?? null };
  }
  throw e;
}

/** The last request id the client used (the SDK numbers requests from 0). */
function lastId(conn) {
  return Math.max(...conn.raw.keys());
}

async function listResources(conn) {
  try {
    const all = [];
    let cursor;
    do {
      const page = await conn.client.listResources(cursor ? { cursor } : undefined);
      all.push(...page.resources);
      cursor = page.nextCursor;
    } while (cursor);
    const items = all.map((r) => ({ uri: r.uri, name: r.name, title: r.title ?? null, description: r.description ?? null }));
    return { text: rustJson(items), isError: false, raw: conn.raw.get(lastId(conn)), resources: all };
  } catch (e) {
    return errorOutcome(e, conn.raw, lastId(conn));
  }
}

async function readResource(conn, uri) {
  try {
    const r = await conn.client.readResource({ uri });
    const text = r.contents.map((c) => (typeof c.text === "string" ? c.text : JSON.stringify(c))).join("\n");
    return { text, isError: false, raw: conn.raw.get(lastId(conn)) };
  } catch (e) {
    return errorOutcome(e, conn.raw, lastId(conn));
  }
}

/** Any request, raw: the JSON-RPC answer without its id. */
async function rawRequest(conn, method, params) {
  const req = params === undefined ? { method } : { method, params };
  try {
    await conn.client.request(req, z.unknown(), { timeout: 30000 });
  } catch (e) {
    if (!(e && typeof e.code === "number")) throw e;
  }
  const msg = conn.raw.get(lastId(conn));
  if (!msg) return null;
  const { id: _id, ...rest } = msg;
  return rest;
}

// ---------------------------------------------------------------------------------------------
// Oracle plans (tasks/src/oracle.rs, tasks/src/replay.rs)

/** [task, plan file] for every task folder: the arm's own plan, else the one it borrows. */
function planFiles() {
  const borrowed = parseToml(readFileSync(path.join(HERE, "arm.toml"), "utf8")).oracle_from;
  const tasks = readdirSync(TASKS_DIR).filter((t) => existsSync(path.join(TASKS_DIR, t, "task.md"))).sort();
  const out = [];
  for (const task of tasks) {
    const own = path.join(HERE, "oracle", `${task}.toml`);
    if (existsSync(own)) out.push([task, own]);
    else if (borrowed) out.push([task, path.join(TASKS_DIR, task, "oracle", `${borrowed}.toml`)]);
  }
  return out;
}

function pointer(value, ptr) {
  if (ptr === "") return value;
  if (!ptr.startsWith("/")) return undefined;
  let v = value;
  for (const part of ptr.slice(1).split("/")) {
    const key = part.replaceAll("~1", "/").replaceAll("~0", "~");
    if (Array.isArray(v)) {
      if (!/^(0|[1-9][0-9]*)$/.test(key)) return undefined;
      v = v[Number(key)];
    } else if (v && typeof v === "object") {
      v = Object.prototype.hasOwnProperty.call(v, key) ? v[key] : undefined;
    } else return undefined;
    if (v === undefined) return undefined;
  }
  return v;
}

function interpolate(text, vars) {
  return text.replace(/\$\{([^}]*)\}/g, (_, name) => {
    if (!(name in vars)) throw new Error(`\${${name}} has no saved value`);
    const v = vars[name];
    return typeof v === "string" ? v : JSON.stringify(v);
  });
}

function substitute(value, vars) {
  if (typeof value === "string") {
    const m = /^\$\{([^}]*)\}$/.exec(value);
    if (m && !m[1].includes("${")) {
      if (!(m[1] in vars)) throw new Error(`\${${m[1]}} has no saved value`);
      return vars[m[1]];
    }
    return interpolate(value, vars);
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, vars));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, vars)]));
  return value;
}

async function replay(plan, conn) {
  const vars = {};
  const calls = [];
  for (const [i, step] of plan.steps.entries()) {
    let out;
    let name;
    if (step.tool !== undefined) {
      name = step.tool;
      const args = substitute(step.args ?? {}, vars);
      try {
        const r = await conn.client.callTool({ name, arguments: args });
        out = { text: r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n"), isError: r.isError === true, raw: conn.raw.get(lastId(conn)) };
      } catch (e) {
        out = errorOutcome(e, conn.raw, lastId(conn));
      }
    } else if (step.list_resources) {
      name = "list resources";
      out = await listResources(conn);
    } else {
      name = interpolate(step.read, vars);
      out = await readResource(conn, name);
    }
    if (out.isError !== (step.expect_error === true)) {
      throw new Error(`${conn.label}: step ${i + 1} (${name}) ${out.isError ? "failed unexpectedly" : "was expected to fail"}: ${out.text.slice(0, 300)}`);
    }
    let parsed;
    try {
      parsed = JSON.parse(out.text);
    } catch {
      parsed = out.text;
    }
    for (const [v, ptr] of Object.entries(step.save ?? {})) {
      const got = pointer(parsed, ptr);
      if (got === undefined) throw new Error(`${conn.label}: step ${i + 1}: cannot save ${v}: nothing at ${ptr}`);
      vars[v] = got;
    }
    calls.push({ name, ...out });
  }
  return { calls, answer: interpolate(plan.answer ?? "", vars) };
}

async function resetBackend() {
  const r = await fetch(`${ADMIN_URL}/admin/reset`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  if (!r.ok) throw new Error(`reset failed: ${r.status} ${await r.text()}`);
}

// ---------------------------------------------------------------------------------------------
// Comparisons

/** Raw JSON-RPC answers compared as JSON values (key order is not part of JSON). */
function sameRaw(a, b) {
  const strip = (m) => {
    if (!m) return m;
    const { id: _id, ...rest } = m;
    return rest;
  };
  return isDeepStrictEqual(strip(a), strip(b));
}

const LEAKS = [];
function watchLeaks(where, text) {
  if (typeof text === "string" && /INTERNAL ONLY|internal_notes|RB-INT-|SECRET-NOTE/.test(text)) LEAKS.push(where);
}

function compareOutcome(what, r, t) {
  watchLeaks(`${what} (rust)`, r.text);
  watchLeaks(`${what} (ts)`, t.text);
  watchLeaks(`${what} (ts raw)`, JSON.stringify(t.raw ?? null));
  let same = true;
  if (r.text !== t.text || r.isError !== t.isError) {
    same = false;
    if (!EXPLAINED.includes(what)) fail(`${what}: text/error flag\n  rust(${r.isError}): ${JSON.stringify(r.text).slice(0, 400)}\n  ts  (${t.isError}): ${JSON.stringify(t.text).slice(0, 400)}`);
  } else if (!sameRaw(r.raw, t.raw)) {
    same = false;
    if (!EXPLAINED.includes(what)) fail(`${what}: raw answer\n  rust: ${JSON.stringify(r.raw).slice(0, 400)}\n  ts  : ${JSON.stringify(t.raw).slice(0, 400)}`);
  }
  return same;
}

function compareValue(what, r, t) {
  watchLeaks(`${what} (ts)`, JSON.stringify(t ?? null));
  if (isDeepStrictEqual(r, t)) return true;
  if (!EXPLAINED.includes(what)) fail(`${what}\n  rust: ${JSON.stringify(r).slice(0, 600)}\n  ts  : ${JSON.stringify(t).slice(0, 600)}`);
  return false;
}

// ---------------------------------------------------------------------------------------------
// Probes shared by the real and the fake backend

const READ_PROBES = [
  "runbook://auth-high-latency",
  "runbook://nope",
  "runbooks://service/auth",
  "runbooks://service/nope",
  "runbooks://service/",
  "runbook://",
  "http://x",
  "",
  "runbook://a b",
  "runbook://../x",
  "RUNBOOK://auth-high-latency",
  "runbooks://service/auth/extra",
  "runbooks://service/auth?x=1",
  `runbook://${"é".repeat(250)}`,
  `runbooks://service/${"a".repeat(201)}`,
  `runbook://${"a".repeat(200)}`,
  `x${"y".repeat(199)}`,
  `x${"y".repeat(200)}`,
];

const RAW_PROBES = [
  ["tools/list", {}],
  ["tools/list", { cursor: "abc" }],
  ["tools/call", { name: "x", arguments: {} }],
  ["tools/call", {}],
  ["resources/templates/list", {}],
  ["resources/read", { uri: 5 }],
  ["resources/read", undefined],
  ["resources/read", { uri: "runbook://auth-high-latency", extra: 1 }],
  ["resources/list", { cursor: "abc" }],
  ["prompts/list", {}],
  ["resources/subscribe", { uri: "runbook://x" }],
  ["logging/setLevel", { level: "info" }],
  ["completion/complete", { ref: { type: "ref/resource", uri: "runbook://{slug}" }, argument: { name: "slug", value: "a" } }],
  ["ping", undefined],
  ["foo/bar", {}],
];

async function probes(label, rust, ts, reads = READ_PROBES) {
  let n = 0;
  let same = 0;
  for (const uri of reads) {
    n++;
    if (compareOutcome(`${label} read ${JSON.stringify(uri).slice(0, 60)}`, await readResource(rust, uri), await readResource(ts, uri))) same++;
  }
  n++;
  if (compareOutcome(`${label} list_resources`, await listResources(rust), await listResources(ts))) same++;
  return { n, same };
}

// ---------------------------------------------------------------------------------------------
// The fake backend

const fake = { mode: "paged", port: 0, hits: 0 };

function fakeRunbooks(service) {
  const all = [];
  for (const s of ["alpha", "beta"]) {
    for (let i = 1; i <= 5; i++) {
      all.push({
        id: all.length + 1,
        slug: `${s}-rb-${i}`,
        title: `${s[0].toUpperCase()}${s.slice(1)}: case ${i} "quoted" <b>&</b> ünïcödé`,
        service: s,
        body: `1. Step one of ${s} ${i}.\n2. Step two\twith a tab.`,
        internal_notes: "SECRET-NOTE: escalation bridge 000",
        updated_at: `2025-0${i}-01T00:00:00Z`,
        extra_field: 1,
      });
    }
  }
  return service ? all.filter((r) => r.service === service) : all;
}

function startFake() {
  const server = http.createServer((req, res) => {
    fake.hits++;
    const u = new URL(req.url, "http://x");
    const q = u.searchParams;
    const json = (status, body) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(typeof body === "string" ? body : JSON.stringify(body));
    };
    if (u.pathname === "/services") {
      const name = q.get("name");
      const exists = ["alpha", "beta", "empty"].includes(name);
      return json(200, { data: exists ? [{ id: 1, name }] : [], total: exists ? 1 : 0, limit: 1, offset: 0, next_offset: null });
    }
    if (u.pathname !== "/runbooks") return json(404, { error: "not_found", message: "no such path" });
    const offset = Number(q.get("offset") ?? 0);
    const limit = Number(q.get("limit") ?? 50);
    switch (fake.mode) {
      case "paged": {
        let rows = fakeRunbooks(q.get("service"));
        if (q.get("slug") !== null) rows = rows.filter((r) => r.slug === q.get("slug"));
        const size = Math.min(limit, 3); // pages of 3, whatever the limit
        const page = rows.slice(offset, offset + size);
        const next = offset + size < rows.length ? offset + size : null;
        return json(200, { data: page, total: rows.length, limit, offset, next_offset: next });
      }
      case "stuck": // next_offset never advances: one page only
        return json(200, { data: fakeRunbooks().slice(0, 2), total: 10, limit, offset, next_offset: offset });
      case "endless": // always one more page: MAX_PAGES bounds it
        return json(200, { data: [fakeRunbooks()[offset % 10]], total: 1e9, limit, offset, next_offset: offset + 1 });
      case "bad_shape":
        return json(200, { data: [{ slug: 1, title: "t", internal_notes: "SECRET-NOTE" }], next_offset: null });
      case "float_offset":
        return json(200, { data: fakeRunbooks().slice(0, 1), next_offset: 1.5 });
      case "no_data":
        return json(200, { next_offset: null });
      case "status_field":
        return json(400, { error: "bad_request", field: "limit", message: "must be at most 200" });
      case "status_message":
        return json(422, { error: "validation_failed", message: "nope", field: null });
      case "status_text":
        res.writeHead(500, { "content-type": "text/plain" });
        return res.end("boom: the backend's own error text");
      case "status_json_nomsg":
        return json(503, { error: "busy" });
      case "not_json":
        res.writeHead(200, { "content-type": "text/plain" });
        return res.end("<html>" + "x".repeat(300));
      case "hang":
        return; // never answers
      default:
        return json(500, { message: "unknown mode" });
    }
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const table = [];

  // 1. The real backend.
  await resetBackend();
  const rust = await connectRust(BACKEND_URL);
  const ts = await connectTs(BACKEND_URL);

  compareValue("protocol version", rust.raw.get(0)?.result?.protocolVersion, ts.raw.get(0)?.result?.protocolVersion);
  compareValue("initialize result", rust.raw.get(0)?.result, ts.raw.get(0)?.result);
  compareValue("capabilities", rust.client.getServerCapabilities(), ts.client.getServerCapabilities());
  compareValue("server info", rust.client.getServerVersion(), ts.client.getServerVersion());
  compareValue("instructions", rust.client.getInstructions(), ts.client.getInstructions());
  compareValue("tools", (await rust.client.listTools()).tools, (await ts.client.listTools()).tools);
  compareValue("resource templates", await rust.client.listResourceTemplates(), await ts.client.listResourceTemplates());
  const rl = await listResources(rust);
  const tl = await listResources(ts);
  compareValue("resource list (uri, name, title, description, mimeType, every field)", rl.resources, tl.resources);
  console.log(`resources: rust ${rl.resources.length}, ts ${tl.resources.length}; templates: ${(await ts.client.listResourceTemplates()).resourceTemplates.length}`);

  let rawSame = 0;
  for (const [method, params] of RAW_PROBES) {
    const r = await rawRequest(rust, method, params);
    const t = await rawRequest(ts, method, params);
    if (compareValue(`raw ${method} ${JSON.stringify(params) ?? ""}`, r, t)) rawSame++;
  }
  const real = await probes("real", rust, ts);
  table.push(["(probes, real backend)", real.n + RAW_PROBES.length, real.same + rawSame === real.n + RAW_PROBES.length]);

  // Oracle plans.
  const planRows = [];
  for (const [task, file] of planFiles()) {
    const plan = parseToml(readFileSync(file, "utf8"));
    await resetBackend();
    const r = await replay(plan, rust);
    await resetBackend();
    const t = await replay(plan, ts);
    let same = r.answer === t.answer;
    if (!same) fail(`${task}: answers differ`);
    for (const [i, rc] of r.calls.entries()) {
      if (!compareOutcome(`${task} step ${i + 1} (${rc.name})`, rc, t.calls[i])) same = false;
    }
    const bytes = (c) => c.calls.reduce((s, x) => s + Buffer.byteLength(x.text, "utf8"), 0);
    planRows.push([task, r.calls.length, same, bytes(r), bytes(t)]);
  }
  await rust.close();
  await ts.close();

  // 2. The fake backend.
  const fakeServer = await startFake();
  const fakeUrl = `http://127.0.0.1:${fakeServer.address().port}`;
  const fr = await connectRust(fakeUrl);
  const ft = await connectTs(fakeUrl);
  const fakeReads = [
    "runbook://alpha-rb-1",
    "runbook://beta-rb-5",
    "runbook://gamma-rb-1",
    "runbooks://service/alpha",
    "runbooks://service/beta",
    "runbooks://service/empty",
    "runbooks://service/ghost",
  ];
  const modes = ["paged", "stuck", "endless", "bad_shape", "float_offset", "no_data", "status_field", "status_message", "status_text", "status_json_nomsg", "not_json"];
  if (!SKIP_TIMEOUT) modes.push("hang");
  for (const mode of modes) {
    fake.mode = mode;
    const reads = mode === "hang" ? ["runbook://alpha-rb-1"] : fakeReads;
    const hitsBefore = fake.hits;
    const res = await probes(`fake:${mode}`, fr, ft, reads);
    table.push([`(fake backend: ${mode})`, res.n, res.same === res.n, fake.hits - hitsBefore]);
  }
  await fr.close();
  await ft.close();
  fakeServer.closeAllConnections();
  fakeServer.close();

  // An unreachable backend (a port nobody listens on).
  const deadUrl = `http://127.0.0.1:${await freePort()}`;
  const dr = await connectRust(deadUrl);
  const dt = await connectTs(deadUrl);
  const dead = await probes("unreachable", dr, dt, ["runbook://x", "runbooks://service/x", "runbook://a b"]);
  table.push(["(unreachable backend)", dead.n, dead.same === dead.n]);
  await dr.close();
  await dt.close();

  // 3. Leaks.
  if (LEAKS.length) fail(`internal notes (or a fake secret) in: ${LEAKS.join(", ")}`);

  // Summary.
  const pad = (s, n) => String(s).padEnd(n);
  console.log("");
  console.log(`${pad("task", 30)} ${pad("calls", 5)} ${pad("identical", 9)} ${pad("bytes rust", 10)} bytes ts`);
  for (const [task, calls, same, rb, tb] of planRows) console.log(`${pad(task, 30)} ${pad(calls, 5)} ${pad(same ? "y" : "n", 9)} ${pad(rb, 10)} ${tb}`);
  console.log("");
  console.log(`${pad("extra checks", 36)} ${pad("calls", 5)} ${pad("identical", 9)} backend requests (both servers)`);
  for (const [what, calls, same, hits] of table) console.log(`${pad(what, 36)} ${pad(calls, 5)} ${pad(same ? "y" : "n", 9)} ${hits ?? ""}`);
  console.log("");
  console.log(`internal notes leaked: ${LEAKS.length ? "YES" : "no"}`);
  console.log(failures ? `${failures} unexplained difference(s)` : "no unexplained differences");
  process.exit(failures ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
