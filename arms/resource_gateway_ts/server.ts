// resource_gateway, ported to TypeScript on the official MCP TypeScript SDK.
//
// A faithful port of the Rust pattern server `servers/src/modules/resource_gateway/gateway.rs`
// (with the parts of `backend_client.rs` and `launch.rs` it relies on): every runbook is a
// resource `runbook://<slug>` read as markdown; a template per service indexes that service's
// runbooks. No tools. The backend's `internal_notes` never leave the server: a backend record is
// copied field by field into a `Runbook` that has no place for them, so no output path (list,
// read, template read, error) can carry them.
//
// Served over the SDK's Streamable HTTP server transport at http://127.0.0.1:$PORT/mcp, one MCP
// session (and one `Server`) per client, as the Rust server does over HTTP. Reads no environment
// variable but BACKEND_URL and PORT. Logs to stderr only.
//
// Every difference from the Rust original that remains is listed in README.md.

import { randomUUID } from "node:crypto";

import type { NextFunction, Request, Response } from "express";
import * as z from "zod/v4";

import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { ReadResourceResult, Resource, ResourceTemplate } from "@modelcontextprotocol/sdk/types.js";

// ---------------------------------------------------------------------------------------------
// Constants (gateway.rs, backend_client.rs)

const SERVER_NAME = "resource_gateway";
const SERVER_VERSION = "0.1.0";

const RUNBOOK_SCHEME = "runbook://";
const SERVICE_PREFIX = "runbooks://service/";
const MARKDOWN = "text/markdown";
/** The backend's largest page. */
const PAGE = 200;
/** Upper bound on pages fetched for one answer, against a backend that never ends a list. */
const MAX_PAGES = 1000;

/** Base URL of the backend when none is given (`DEFAULT_BACKEND_URL`). */
const DEFAULT_BACKEND_URL = "http://127.0.0.1:8080";
/** Upper bound on one backend request, connection and body included (`REQUEST_TIMEOUT`). */
const REQUEST_TIMEOUT_SECS = 10;

// JSON-RPC error codes used by rmcp's `ErrorData` constructors.
const RESOURCE_NOT_FOUND = -32002;
const INTERNAL_ERROR = -32603;
const INVALID_PARAMS = -32602;
const METHOD_NOT_FOUND = -32601;

function log(message: string): void {
  process.stderr.write(`${SERVER_NAME}: ${message}\n`);
}

/**
 * A JSON-RPC error with exactly this code and message. The SDK sends a thrown error's own
 * `code` and `message` (`McpError` would prefix the message with "MCP error <code>: ", which
 * rmcp's `ErrorData` does not), so errors are plain `Error`s carrying a `code`.
 */
function rpcError(code: number, message: string): Error {
  return Object.assign(new Error(message), { code });
}

// ---------------------------------------------------------------------------------------------
// Backend client (backend_client.rs): GET only, which is all the gateway uses.

/** `CallError`: its message is the Rust enum's `Display` text. */
class CallError extends Error {}

/** rmcp/reqwest's text for a request that got no answer (`describe`). */
function describe(e: unknown, fullUrl: string, phase: "send" | "body"): string {
  const err = e as { name?: string; cause?: { code?: string; name?: string } };
  if (err?.name === "TimeoutError" || err?.cause?.name === "TimeoutError") {
    return `no answer within ${REQUEST_TIMEOUT_SECS} s`;
  }
  const code = err?.cause?.code ?? "";
  const connectCodes = [
    "ECONNREFUSED",
    "ENOTFOUND",
    "EAI_AGAIN",
    "EHOSTUNREACH",
    "ENETUNREACH",
    "EADDRNOTAVAIL",
    "ETIMEDOUT",
    "UND_ERR_CONNECT_TIMEOUT",
  ];
  if (phase === "send" && connectCodes.includes(code)) {
    return "connection refused or failed; is the backend running?";
  }
  // reqwest's own `Display` for what is left (best effort; see README).
  if (phase === "body") return "error decoding response body";
  let shown = fullUrl;
  try {
    shown = new URL(fullUrl).href;
  } catch {
    return "builder error";
  }
  return `error sending request for url (${shown})`;
}

class BackendClient {
  readonly base: string;

  constructor(base: string) {
    this.base = base.replace(/\/+$/, "");
  }

  /** GET `path?query`: the JSON body on 2xx, a `CallError` otherwise (`BackendClient::send`). */
  async get(path: string, query: Array<[string, string]>): Promise<unknown> {
    const url = `${this.base}${path}`;
    const qs = new URLSearchParams(query).toString();
    const fullUrl = qs ? `${url}?${qs}` : url;
    const signal = AbortSignal.timeout(REQUEST_TIMEOUT_SECS * 1000);
    let resp: globalThis.Response;
    try {
      resp = await fetch(fullUrl, { method: "GET", signal });
    } catch (e) {
      throw new CallError(`the backend at ${url} could not be reached: ${describe(e, fullUrl, "send")}`);
    }
    const status = resp.status;
    let text: string;
    try {
      text = await resp.text();
    } catch (e) {
      throw new CallError(`the backend at ${url} could not be reached: ${describe(e, fullUrl, "body")}`);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      if (status >= 400) {
        body = text;
      } else {
        throw new CallError(`the backend sent a response that is not JSON: ${Array.from(text).slice(0, 200).join("")}`);
      }
    }
    if (status >= 400) {
      const field = isObject(body) ? body["field"] : undefined;
      const msg = isObject(body) ? body["message"] : undefined;
      let message: string;
      if (typeof field === "string" && typeof msg === "string") message = `${field}: ${msg}`;
      else if (typeof msg === "string") message = msg;
      else message = text;
      throw new CallError(`backend answered ${status}: ${message}`);
    }
    return body;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

// ---------------------------------------------------------------------------------------------
// The gateway (gateway.rs)

/**
 * What the gateway keeps of a backend runbook record: everything a reader may see. Unknown
 * fields (`internal_notes`, `id`) are never copied.
 */
interface Runbook {
  slug: string;
  title: string;
  service: string;
  body: string;
  updated_at: string;
}

interface RunbookPage {
  data: Runbook[];
  next_offset: number | null;
}

/** `serde_json::from_value::<RunbookPage>`: the page, or `null` when its shape is wrong. */
function parseRunbookPage(value: unknown): RunbookPage | null {
  if (!isObject(value) || !Array.isArray(value["data"])) return null;
  const data: Runbook[] = [];
  for (const item of value["data"]) {
    if (!isObject(item)) return null;
    const { slug, title, service, body, updated_at } = item;
    if (typeof slug !== "string" || typeof title !== "string" || typeof service !== "string") return null;
    if (typeof body !== "string" || typeof updated_at !== "string") return null;
    data.push({ slug, title, service, body, updated_at });
  }
  const next = value["next_offset"];
  if (next === undefined || next === null) return { data, next_offset: null };
  if (typeof next !== "number" || !Number.isInteger(next)) return null;
  return { data, next_offset: next };
}

function runbookUri(r: Runbook): string {
  return `${RUNBOOK_SCHEME}${r.slug}`;
}

function runbookResource(r: Runbook): Resource {
  return { uri: runbookUri(r), name: r.slug, title: r.title, description: `${r.service} service`, mimeType: MARKDOWN };
}

function runbookMarkdown(r: Runbook): string {
  return `# ${r.title}\n\n- Service: ${r.service}\n- Last updated: ${r.updated_at}\n\n${r.body}\n`;
}

/** The protocol error for a URI that names nothing: it repeats the URI (shortened) and nothing else. */
function notFound(uri: string): Error {
  const chars = Array.from(uri);
  const shown = chars.slice(0, 200).join("");
  const ellipsis = chars.length > 200 ? "…" : "";
  return rpcError(RESOURCE_NOT_FOUND, `resource not found: ${shown}${ellipsis}`);
}

function backendFault(e: unknown): Error {
  if (e instanceof CallError) return rpcError(INTERNAL_ERROR, `could not read runbooks: ${e.message}`);
  throw e;
}

/** Slugs and service names are plain identifiers; anything else cannot name a runbook. */
function isIdentifier(s: string): boolean {
  return /^[A-Za-z0-9_-]{1,200}$/.test(s);
}

const TEMPLATES: ResourceTemplate[] = [
  {
    uriTemplate: `${RUNBOOK_SCHEME}{slug}`,
    name: "runbook_by_slug",
    description: "One runbook: title, service, last update and steps.",
    mimeType: MARKDOWN,
  },
  {
    uriTemplate: `${SERVICE_PREFIX}{service}`,
    name: "runbooks_by_service",
    description: "A service's runbooks: titles and URIs.",
    mimeType: MARKDOWN,
  },
];

class ResourceGateway {
  constructor(private readonly backend: BackendClient) {}

  /** Every runbook matching the filters, across all backend pages. */
  async runbooks(service: string | null, slug: string | null): Promise<Runbook[]> {
    const out: Runbook[] = [];
    let offset = 0;
    for (let i = 0; i < MAX_PAGES; i++) {
      // Field order of the Rust `RunbookQuery`: service, slug, limit, offset.
      const query: Array<[string, string]> = [];
      if (service !== null) query.push(["service", service]);
      if (slug !== null) query.push(["slug", slug]);
      query.push(["limit", String(PAGE)], ["offset", String(offset)]);
      let value: unknown;
      try {
        value = await this.backend.get("/runbooks", query);
      } catch (e) {
        throw backendFault(e);
      }
      // Never echo the body: it holds the internal notes.
      const page = parseRunbookPage(value);
      if (page === null) throw rpcError(INTERNAL_ERROR, "the backend sent runbooks in an unexpected shape");
      const got = page.data.length;
      out.push(...page.data);
      const next = page.next_offset;
      if (next !== null && got > 0 && next > offset) {
        offset = next;
      } else {
        return out;
      }
    }
    return out;
  }

  async serviceExists(name: string): Promise<boolean> {
    let v: unknown;
    try {
      v = await this.backend.get("/services", [
        ["name", name],
        ["limit", "1"],
      ]);
    } catch (e) {
      throw backendFault(e);
    }
    const total = isObject(v) ? v["total"] : undefined;
    return typeof total === "number" && Number.isInteger(total) && total > 0;
  }

  async readRunbook(uri: string, slug: string): Promise<string> {
    if (!isIdentifier(slug)) throw notFound(uri);
    const found = await this.runbooks(null, slug);
    if (found.length === 0) throw notFound(uri);
    return runbookMarkdown(found[0]!);
  }

  async readServiceIndex(uri: string, service: string): Promise<string> {
    if (!isIdentifier(service)) throw notFound(uri);
    const found = await this.runbooks(service, null);
    if (found.length === 0 && !(await this.serviceExists(service))) throw notFound(uri);
    let md = `# Runbooks of service ${service}\n\n`;
    if (found.length === 0) md += "None.\n";
    for (const r of found) md += `- [${r.title}](${runbookUri(r)})\n`;
    return md;
  }

  async listResources(): Promise<{ resources: Resource[] }> {
    const all = await this.runbooks(null, null);
    return { resources: all.map(runbookResource) };
  }

  listResourceTemplates(): { resourceTemplates: ResourceTemplate[] } {
    return { resourceTemplates: TEMPLATES };
  }

  async readResource(uri: string): Promise<ReadResourceResult> {
    let text: string;
    if (uri.startsWith(RUNBOOK_SCHEME)) {
      text = await this.readRunbook(uri, uri.slice(RUNBOOK_SCHEME.length));
    } else if (uri.startsWith(SERVICE_PREFIX)) {
      text = await this.readServiceIndex(uri, uri.slice(SERVICE_PREFIX.length));
    } else {
      throw notFound(uri);
    }
    return { contents: [{ uri, mimeType: MARKDOWN, text }] };
  }
}

// ---------------------------------------------------------------------------------------------
// MCP wiring (the rmcp `ServerHandler` impl)

/**
 * The SDK's `Server`, allowed to answer `tools/list` (with an empty list, as the Rust server's
 * empty tool router does) without advertising the `tools` capability: the Rust server's
 * capabilities are exactly `{"resources": {}}`.
 */
class GatewayServer extends Server {
  protected override assertRequestHandlerCapability(method: string): void {
    if (method === "tools/list") return;
    super.assertRequestHandlerCapability(method);
  }
}

/**
 * Request schemas that accept any params, so that malformed params are answered as rmcp
 * answers them (see `paramsOr`) instead of with the SDK's validation error.
 */
const loose = (method: string) => z.object({ method: z.literal(method), params: z.unknown().optional() }).loose();

/**
 * rmcp answers a known method whose params do not deserialize with "method not found" and the
 * method's name as the message.
 */
function badParams(method: string): Error {
  return rpcError(METHOD_NOT_FOUND, method);
}

function newServer(backend: BackendClient): Server {
  const gateway = new ResourceGateway(backend);
  const server = new GatewayServer({ name: SERVER_NAME, version: SERVER_VERSION }, { capabilities: { resources: {} } });

  server.setRequestHandler(loose("resources/list"), async () => gateway.listResources());
  server.setRequestHandler(loose("resources/templates/list"), async () => gateway.listResourceTemplates());
  server.setRequestHandler(loose("resources/read"), async (request) => {
    const params = request.params;
    if (!isObject(params) || typeof params["uri"] !== "string") throw badParams("resources/read");
    return gateway.readResource(params["uri"]);
  });
  server.setRequestHandler(loose("tools/list"), async () => ({ tools: [] }));
  // tools/call is answered here rather than through `setRequestHandler`, whose tools/call
  // wrapper validates the params first and would answer malformed ones with its own error.
  // The empty tool router of the Rust server knows no tool; rmcp's default handler answers any
  // other request with "method not found" naming the method.
  server.fallbackRequestHandler = async (request) => {
    if (request.method === "tools/call") {
      const params = request.params;
      if (!isObject(params) || typeof params["name"] !== "string") throw badParams("tools/call");
      throw rpcError(INVALID_PARAMS, "tool not found");
    }
    throw rpcError(METHOD_NOT_FOUND, request.method);
  };
  server.onerror = (e) => log(`MCP error: ${e instanceof Error ? e.message : String(e)}`);
  return server;
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP at 127.0.0.1:$PORT/mcp

const LOOPBACK_HOSTNAMES = ["localhost", "127.0.0.1", "[::1]"];

/**
 * DNS-rebinding protection for `Origin` (the SDK's `createMcpExpressApp` checks `Host` only):
 * as the Rust server, a request without `Origin` passes; one with `Origin` must come from a
 * loopback page (http or https, any port), or it gets 403.
 */
function originValidation(req: Request, res: Response, next: NextFunction): void {
  const origin = req.headers.origin;
  if (origin === undefined) return next();
  let ok = false;
  try {
    const u = new URL(origin);
    ok = (u.protocol === "http:" || u.protocol === "https:") && LOOPBACK_HOSTNAMES.includes(u.hostname);
  } catch {
    ok = false;
  }
  if (ok) return next();
  res.status(403).json({
    jsonrpc: "2.0",
    error: { code: -32600, message: "Forbidden: Origin header is not allowed (allowed: loopback origins)" },
    id: null,
  });
}

function jsonRpcError(res: Response, status: number, code: number, message: string): void {
  res.status(status).json({ jsonrpc: "2.0", error: { code, message }, id: null });
}

function main(): void {
  const backendUrl = process.env["BACKEND_URL"] || DEFAULT_BACKEND_URL;
  const portText = process.env["PORT"] ?? "";
  const port = Number(portText);
  if (!/^[0-9]+$/.test(portText) || !Number.isInteger(port) || port < 0 || port > 65535) {
    log(`PORT must be a port number (0-65535), got ${JSON.stringify(portText)}`);
    process.exit(2);
  }
  const backend = new BackendClient(backendUrl);

  // Host validation (loopback names only) and the JSON body parser come from the SDK.
  const app = createMcpExpressApp({ host: "127.0.0.1" });
  app.disable("x-powered-by");
  app.use(originValidation);

  const transports = new Map<string, StreamableHTTPServerTransport>();

  app.all("/mcp", async (req: Request, res: Response) => {
    try {
      const sessionId = req.header("mcp-session-id");
      let transport = sessionId === undefined ? undefined : transports.get(sessionId);
      if (transport === undefined) {
        if (sessionId !== undefined) return jsonRpcError(res, 404, -32001, "Session not found");
        if (req.method !== "POST" || !isInitializeRequest(req.body)) {
          return jsonRpcError(res, 400, -32000, "Bad Request: No valid session ID provided");
        }
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            transports.set(id, created);
          },
          onsessionclosed: (id) => {
            transports.delete(id);
          },
        });
        created.onclose = () => {
          if (created.sessionId !== undefined) transports.delete(created.sessionId);
        };
        await newServer(backend).connect(created);
        transport = created;
      }
      await transport.handleRequest(req, res, req.body);
    } catch (e) {
      log(`error handling ${req.method} /mcp: ${e instanceof Error ? e.message : String(e)}`);
      if (!res.headersSent) jsonRpcError(res, 500, -32603, "Internal server error");
    }
  });

  // Any other path: a JSON-RPC error, as the Rust server answers, not express's HTML page.
  app.use((_req: Request, res: Response) => jsonRpcError(res, 404, -32600, "Not Found"));

  // A body that is not JSON: a JSON-RPC parse error, not express's HTML page.
  app.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(err);
    const status = (err as { status?: number })?.status ?? 500;
    if (status >= 400 && status < 500) return jsonRpcError(res, status, -32700, "Parse error");
    log(`error: ${err instanceof Error ? err.message : String(err)}`);
    jsonRpcError(res, 500, -32603, "Internal server error");
  });

  const httpServer = app.listen(port, "127.0.0.1", () => {
    const address = httpServer.address();
    const shown = typeof address === "object" && address !== null ? address.port : port;
    log(`listening on http://127.0.0.1:${shown}/mcp (backend ${backend.base})`);
  });
  httpServer.on("error", (e) => {
    log(`cannot listen on 127.0.0.1:${port}: ${e.message}`);
    process.exit(1);
  });

  let stopping = false;
  const shutdown = () => {
    if (stopping) return;
    stopping = true;
    for (const t of transports.values()) void t.close();
    httpServer.close(() => process.exit(0));
    httpServer.closeAllConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

main();
