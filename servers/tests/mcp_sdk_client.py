"""Drives MCP servers with the official MCP Python SDK, as any third-party client would.

Run by servers/tests/sdk_clients.rs (it fails with "run .ci/test-tools" when the venv is
missing). Reads a JSON plan from stdin:

    {"servers": [{"name": "wrapper", "stdio": {"command": "...", "args": [...]},
                  "http": "http://127.0.0.1:PORT/mcp"}, ...]}

For every server and both transports it initializes a session, lists tools (and resources and
resource templates when the server offers resources), calls every tool that needs no argument
(with `limit: 2` when the tool takes a `limit`), reads the first resource, and closes. It prints
one JSON line per session and exits non-zero, naming what failed, when a session failed, a call
came back as an error, or the SDK logged a warning (such as "Session termination failed").
"""

import asyncio
import json
import logging
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


class Warnings(logging.Handler):
    """Every warning or error the SDK logs."""

    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(f"{record.name}: {record.getMessage()}")


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content)


# Tools that cannot be called without arguments, with one call that must work (the server's own
# tests cover them in full).
SAMPLES = {
    "run_script": {"script": "print(users.get(1).name)"},
    "search_tools": {"query": "list tickets"},
    "call_tool": {"name": "tickets_list", "arguments": {"limit": 2}},
}

# A catalogue server (tool_search) lists tools of systems that are not connected: calling one
# must answer exactly that, as a tool error.
NOT_CONNECTED = "is not connected to this workspace"


async def exercise(session):
    """What one session checks; returns a summary."""
    init = await session.initialize()
    tools = (await session.list_tools()).tools
    calls = []
    for tool in tools:
        schema = tool.input_schema or {}
        if tool.name in SAMPLES:
            result = await session.call_tool(tool.name, SAMPLES[tool.name])
            if result.is_error or not text_of(result).strip():
                raise AssertionError(f"{tool.name} returned an error or nothing: {text_of(result)[:300]}")
            calls.append(tool.name)
            continue
        if schema.get("required"):
            continue
        args = {}
        limit = (schema.get("properties") or {}).get("limit")
        if limit is not None:
            # A plain integer type is what lets a client send a number at all.
            if limit.get("type") != "integer":
                raise AssertionError(f"{tool.name}: `limit` has type {limit.get('type')!r}, not 'integer'")
            args["limit"] = 2
        result = await session.call_tool(tool.name, args)
        if result.is_error and NOT_CONNECTED in text_of(result):
            calls.append(tool.name)
            continue
        if result.is_error:
            raise AssertionError(f"{tool.name}({args}) returned an error: {text_of(result)[:300]}")
        if "limit" in args:
            page = json.loads(text_of(result))
            rows = page.get("data") if isinstance(page, dict) else None
            if rows is not None and len(rows) > 2:
                raise AssertionError(f"{tool.name}(limit=2) returned {len(rows)} rows")
        calls.append(tool.name)
    resources_read = 0
    templates = 0
    if init.capabilities.resources is not None:
        templates = len((await session.list_resource_templates()).resource_templates)
        resources = (await session.list_resources()).resources
        if not resources:
            raise AssertionError("the server offers resources but lists none")
        read = await session.read_resource(resources[0].uri)
        if not any(getattr(c, "text", "") for c in read.contents):
            raise AssertionError(f"{resources[0].uri} read as empty")
        resources_read = 1
    if not calls and not resources_read:
        raise AssertionError("nothing could be called or read")
    return {"server_name": init.server_info.name, "tools": len(tools), "calls": len(calls), "templates": templates, "resources_read": resources_read}


async def over_stdio(spec):
    params = StdioServerParameters(command=spec["command"], args=spec["args"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            return await exercise(session)


async def over_http(url):
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            return await exercise(session)


async def main():
    plan = json.load(sys.stdin)
    warnings = Warnings()
    logging.getLogger().addHandler(warnings)
    failures = []
    for server in plan["servers"]:
        for transport in ("stdio", "http"):
            before = len(warnings.records)
            try:
                run = over_stdio(server["stdio"]) if transport == "stdio" else over_http(server["http"])
                summary = await asyncio.wait_for(run, timeout=60)
            except BaseException as e:  # noqa: BLE001 — every failure is reported, none hides another
                failures.append(f"{server['name']} over {transport}: {type(e).__name__}: {e}")
                continue
            logged = warnings.records[before:]
            if logged:
                failures.append(f"{server['name']} over {transport}: the SDK logged {logged}")
            print(json.dumps({"server": server["name"], "transport": transport, **summary}), flush=True)
    if failures:
        print("\n".join(failures), file=sys.stderr)
        sys.exit(1)


asyncio.run(main())
