"""domain_adapter, ported from Rust (servers/src/modules/domain_adapter) to the official MCP
Python SDK (mcp==2.3.0, low-level `mcp.server.lowlevel.Server`).

Six tools in the support desk's words. Customers, people and tickets are named the way a person
names them (a name, a title, or `#id`) and resolved through the backend's list filters: `#id`;
else an exact case-insensitive match; else a unique substring match; else a tool error listing
the candidates (never a guess). Results name customers and assignees next to their ids.

Serves MCP over stdio (stdout is the transport; logs go to stderr). Reads one environment
variable, BACKEND_URL (default http://127.0.0.1:8080, like the Rust server), and talks to the
backend over HTTP only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import re
import sys
import unicodedata
from decimal import Decimal
from typing import Any

import anyio
import httpx2 as httpx  # the HTTP client mcp==2.3.0 itself depends on (the httpx fork)
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

log = logging.getLogger("domain_adapter")

# ---------------------------------------------------------------------------------------------
# Backend client (servers/src/backend_client.rs)
# ---------------------------------------------------------------------------------------------

DEFAULT_BACKEND_URL = "http://127.0.0.1:8080"
REQUEST_TIMEOUT_S = 10
CONNECT_TIMEOUT_S = 2


class CallError(Exception):
    """A failed backend call; `str()` is the text the Rust `CallError` displays."""

    def __init__(self, text: str, status: int | None = None):
        super().__init__(text)
        self.status = status


class BackendClient:
    def __init__(self, base: str):
        self.base = base.rstrip("/")
        # trust_env=False: no proxy or netrc variables are read (the server reads BACKEND_URL only).
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(REQUEST_TIMEOUT_S, connect=CONNECT_TIMEOUT_S), trust_env=False
        )

    async def get(self, path: str, query: dict[str, Any] | None = None) -> Any:
        return await self._send("GET", path, query=query)

    async def post(self, path: str, body: Any) -> Any:
        return await self._send("POST", path, body=body)

    async def patch(self, path: str, body: Any) -> Any:
        return await self._send("PATCH", path, body=body)

    async def _send(self, method: str, path: str, query: dict[str, Any] | None = None, body: Any = None) -> Any:
        url = f"{self.base}{path}"
        params = {k: _query_text(v) for k, v in (query or {}).items()}
        content = None
        headers = {}
        if body is not None:
            content = compact(body).encode()
            headers["content-type"] = "application/json"
        try:
            # reqwest's timeout bounds the whole request, connection included.
            with anyio.fail_after(REQUEST_TIMEOUT_S):
                resp = await self.http.request(method, url, params=params or None, content=content, headers=headers)
                text = resp.text
        except (TimeoutError, httpx.TimeoutException):
            raise CallError(f"the backend at {url} could not be reached: no answer within {REQUEST_TIMEOUT_S} s")
        except httpx.ConnectError:
            raise CallError(f"the backend at {url} could not be reached: connection refused or failed; is the backend running?")
        except httpx.HTTPError as e:
            raise CallError(f"the backend at {url} could not be reached: {e}")
        status = resp.status_code
        try:
            value = json.loads(text)
        except ValueError:
            if status >= 400:
                value = text
            else:
                raise CallError(f"the backend sent a response that is not JSON: {text[:200]}")
        if status >= 400:
            field = value.get("field") if isinstance(value, dict) else None
            msg = value.get("message") if isinstance(value, dict) else None
            if isinstance(field, str) and isinstance(msg, str):
                message = f"{field}: {msg}"
            elif isinstance(msg, str):
                message = msg
            else:
                message = text
            raise CallError(f"backend answered {status}: {message}", status)
        return value


def _query_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def compact(value: Any) -> str:
    """serde_json's `Value::to_string()`: compact, object keys sorted (no `preserve_order`)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def display(value: Any) -> str:
    """`Display` of a serde_json `Value` (as `format!("{}", v["id"])` prints it)."""
    return compact(value)


def json_result(value: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=compact(value))], is_error=False)


def tool_error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


# ---------------------------------------------------------------------------------------------
# Rust string semantics used by the resolver
# ---------------------------------------------------------------------------------------------

# Unicode White_Space, what Rust's `str::trim` and `split_whitespace` use (Python's `isspace`
# also counts U+001C..U+001F).
RUST_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_WS_SPLIT = re.compile("[" + re.escape(RUST_WS) + "]+")
_I64_TEXT = re.compile(r"[+-]?[0-9]+\Z")
I64_MIN, I64_MAX, U64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


def rtrim(s: str) -> str:
    return s.strip(RUST_WS)


def split_whitespace(s: str) -> list[str]:
    return [w for w in _WS_SPLIT.split(s) if w]


def as_i64(v: Any) -> int | None:
    """serde_json's `Value::as_i64`."""
    if isinstance(v, int) and not isinstance(v, bool) and I64_MIN <= v <= I64_MAX:
        return v
    return None


def as_u64(v: Any) -> int | None:
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= U64_MAX:
        return v
    return None


def get(v: Any, key: str) -> Any:
    """`v[key]` on a serde_json `Value`: null when absent or not an object."""
    return v.get(key) if isinstance(v, dict) else None


# ---------------------------------------------------------------------------------------------
# Resolution (servers/src/modules/domain_adapter/resolve.rs)
# ---------------------------------------------------------------------------------------------

SHOWN = 10  # how many candidates an ambiguity message lists
SCAN = 200  # page size used to look for exact matches among substring matches


class Unresolved(Exception):
    """A reference that names no single record; `str()` is the message for the model."""


async def list_page(b: BackendClient, path: str, query: dict[str, Any]) -> tuple[list[Any], int]:
    try:
        v = await b.get(path, query)
    except CallError as e:
        raise Unresolved(str(e))
    data = get(v, "data")
    data = list(data) if isinstance(data, list) else []
    total = as_u64(get(v, "total"))
    return data, (len(data) if total is None else total)


def id_ref(reference: str) -> int | None:
    """`#12` or `12` -> 12 (Rust's `i64::from_str`: ASCII digits, an optional sign)."""
    r = reference[1:] if reference.startswith("#") else reference
    r = rtrim(r)
    if not _I64_TEXT.match(r):
        return None
    n = int(r)
    return n if I64_MIN <= n <= I64_MAX else None


async def by_id(b: BackendClient, plural: str, what: str, id_: int) -> Any:
    try:
        return await b.get(f"/{plural}/{id_}")
    except CallError as e:
        if e.status == 404:
            raise Unresolved(f"There is no {what} #{id_}.")
        raise Unresolved(str(e))


def str_of(v: Any, key: str) -> str:
    s = get(v, key)
    return s if isinstance(s, str) else ""


def same(a: str, b: str) -> bool:
    return rtrim(a).lower() == rtrim(b).lower()


def customer_label(c: Any) -> str:
    return f"#{display(get(c, 'id'))} {str_of(c, 'name')} ({str_of(c, 'tier')}, {str_of(c, 'region')})"


def person_label(u: Any) -> str:
    return f"#{display(get(u, 'id'))} {str_of(u, 'name')} ({str_of(u, 'team')})"


def ticket_label(t: Any, customers: dict[int, str]) -> str:
    cid = as_i64(get(t, "customer_id"))
    customer = customers.get(cid, "no customer") if cid is not None else "no customer"
    return f"#{display(get(t, 'id'))} {str_of(t, 'title')} ({customer}, {str_of(t, 'status')})"


def ambiguous(reference: str, kind: str, total: int, labels: list[str]) -> str:
    shown = f" (showing {len(labels)} of {total})" if total > len(labels) else ""
    retry = "the #id" if kind == "tickets" else "the full name or the #id"
    return (
        f'"{reference}" matches {total} {kind}{shown}; nothing was done. '
        f"Be more specific: retry with {retry} of one of:\n" + "\n".join(labels)
    )


def empty(what: str) -> str:
    return f"The {what} reference is empty; give a name or #id."


async def near(b: BackendClient, path: str, reference: str, label) -> str:
    """Near matches for a reference that matched nothing: what its words match, longest word
    first (length in UTF-8 bytes, as Rust counts), trying at most three words."""
    words = [w for w in split_whitespace(reference) if len(w.encode()) >= 3]
    words.sort(key=lambda w: -len(w.encode()))
    for word in words[:3]:
        try:
            data, _ = await list_page(b, path, {"q": word, "limit": 5})
        except Unresolved:
            continue
        if data:
            return " Similar: " + "; ".join(label(x) for x in data) + "."
    return ""


async def resolve_customer(b: BackendClient, reference: str) -> Any:
    r = rtrim(reference)
    if not r:
        raise Unresolved(empty("customer"))
    i = id_ref(r)
    if i is not None:
        return await by_id(b, "customers", "customer", i)
    data, total = await list_page(b, "/customers", {"name": r, "limit": SHOWN})
    if total == 1:
        return data[0]
    if total != 0:
        raise Unresolved(ambiguous(r, "customers", total, [customer_label(c) for c in data]))
    data, total = await list_page(b, "/customers", {"q": r, "limit": SHOWN})
    if total == 0:
        raise Unresolved(f'No customer is named "{r}" or has it in their name.{await near(b, "/customers", r, customer_label)}')
    if total == 1:
        return data[0]
    raise Unresolved(ambiguous(r, "customers", total, [customer_label(c) for c in data]))


async def resolve_person(b: BackendClient, reference: str) -> Any:
    r = rtrim(reference)
    if not r:
        raise Unresolved(empty("person"))
    i = id_ref(r)
    if i is not None:
        return await by_id(b, "users", "person", i)
    data, total = await list_page(b, "/users", {"q": r, "limit": SCAN})
    exact = [u for u in data if same(str_of(u, "name"), r)]
    if len(exact) == 1:
        return exact[0]
    if total == 0:
        raise Unresolved(f'No person is named "{r}" or has it in their name.{await near(b, "/users", r, person_label)}')
    if total == 1:
        return data[0]
    raise Unresolved(ambiguous(r, "people", total, [person_label(u) for u in data[:SHOWN]]))


async def resolve_ticket(b: BackendClient, reference: str) -> Any:
    r = rtrim(reference)
    if not r:
        raise Unresolved(empty("ticket"))
    i = id_ref(r)
    if i is not None:
        return await by_id(b, "tickets", "ticket", i)
    data, total = await list_page(b, "/tickets", {"q": r, "limit": SCAN})
    exact = [t for t in data if same(str_of(t, "title"), r)]
    if len(exact) == 1:
        return exact[0]
    if not exact:
        if total == 0:
            raise Unresolved(f'No ticket title is or contains "{r}". Search with find_tickets, or give the ticket\'s #id.')
        if total == 1:
            return data[0]
        candidates, count = data, total
    else:
        candidates, count = exact, len(exact)
    shown = candidates[:SHOWN]
    customers = await names(b, "customers", [c for c in (as_i64(get(t, "customer_id")) for t in shown) if c is not None])
    raise Unresolved(ambiguous(r, "tickets", count, [ticket_label(t, customers) for t in shown]))


async def names(b: BackendClient, plural: str, ids: list[int]) -> dict[int, str]:
    """Names of the records `ids` of `/{plural}`, looked up concurrently. Unknown ids are left out."""

    async def one(i: int) -> tuple[int, Any]:
        try:
            return i, await b.get(f"/{plural}/{i}")
        except CallError:
            return i, None

    out: dict[int, str] = {}
    for i, v in await asyncio.gather(*(one(i) for i in sorted(set(ids)))):
        name = get(v, "name")
        if isinstance(name, str):
            out[i] = name
    return out


def named(id_value: Any, names_: dict[int, str]) -> Any:
    i = as_i64(id_value)
    if i is None:
        return None
    return {"id": i, "name": names_.get(i)}


async def with_names(b: BackendClient, tickets: list[Any]) -> list[Any]:
    """Tickets with `customer_id`/`assignee_id` replaced by `customer`/`assignee` objects."""

    def ids(key: str) -> list[int]:
        return [i for i in (as_i64(get(t, key)) for t in tickets) if i is not None]

    customers, people = await asyncio.gather(names(b, "customers", ids("customer_id")), names(b, "users", ids("assignee_id")))
    out = []
    for t in tickets:
        if isinstance(t, dict):
            t = dict(t)
            c = t.pop("customer_id", None)
            a = t.pop("assignee_id", None)
            t["customer"] = named(c, customers)
            t["assignee"] = named(a, people)
        out.append(t)
    return out


async def with_names_one(b: BackendClient, ticket: Any) -> Any:
    return (await with_names(b, [ticket]))[-1]


async def counts_by_status(b: BackendClient, key: str, id_: int) -> dict[str, int]:
    """How many tickets whose `key` (e.g. `customer_id`) is `id_` are in each status."""
    out: dict[str, int] = {}
    first_error: Unresolved | None = None

    async def one(status: str) -> None:
        nonlocal first_error
        try:
            _, total = await list_page(b, "/tickets", {key: id_, "status": status, "limit": 1})
            out[status] = total
        except Unresolved as e:
            # The Rust server returns the first failure to complete (JoinSet order).
            if first_error is None:
                first_error = e

    await asyncio.gather(*(one(s) for s in ("open", "in_progress", "resolved", "closed")))
    if first_error is not None:
        raise first_error
    return out


# ---------------------------------------------------------------------------------------------
# Argument parsing with the Rust server's messages (serde derive, `deny_unknown_fields`)
# ---------------------------------------------------------------------------------------------

STRING, OPT_STRING, OPT_I64 = "string", "opt_string", "opt_i64"
# An update's field that null clears (Rust: `Option<Option<String>>` through `flat::nullable`):
# absent is ABSENT (leave unchanged), null is None (clear), a string is the new value.
CLEAR_STRING = "clear_string"
ABSENT = object()


class BadArguments(Exception):
    pass


def rust_debug_str(s: str) -> str:
    """`format!("{:?}", s)` for a Rust `&str`."""
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\0":
            out.append("\\0")
        elif _rust_escapes(ch):
            out.append("\\u{%x}" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _rust_escapes(ch: str) -> bool:
    """Approximates Rust's `!is_printable(c) || is_grapheme_extended(c)`."""
    cat = unicodedata.category(ch)
    if cat in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Mn", "Me"):
        return True
    return cat == "Zs" and ch != " "


def rust_float(f: float) -> str:
    """A float as serde's `Unexpected::Float` shows it (shortest round-trip digits; fixed
    notation with a `.0` for decimal exponents -5..15, else `1.5e-7` / `1e+16`)."""
    if math.isnan(f) or math.isinf(f):
        return repr(f)
    sign = "-" if math.copysign(1.0, f) < 0 else ""
    d = Decimal(repr(abs(f)))
    digits_t, exp = d.as_tuple().digits, d.as_tuple().exponent
    digits = "".join(map(str, digits_t)).lstrip("0") or "0"
    if digits == "0":
        return sign + "0.0"
    # value = 0.<digits> * 10^kk
    kk = len("".join(map(str, digits_t)).lstrip("0")) + exp
    digits = digits.rstrip("0") or "0"
    if -5 < kk <= 16:
        if kk >= len(digits):
            body = digits + "0" * (kk - len(digits)) + ".0"
        elif kk > 0:
            body = digits[:kk] + "." + digits[kk:]
        else:
            body = "0." + "0" * (-kk) + digits
    else:
        e = kk - 1
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        body = f"{mantissa}e{'+' if e > 0 else '-'}{abs(e)}"
    return sign + body


def unexpected(v: Any) -> str:
    """serde's `Unexpected` for a JSON value, as serde_json would have parsed it."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"boolean `{'true' if v else 'false'}`"
    if isinstance(v, int):
        if I64_MIN <= v <= U64_MAX:
            return f"integer `{v}`"
        return f"floating point `{rust_float(float(v))}`"  # serde_json reads such a number as f64
    if isinstance(v, float):
        return f"floating point `{rust_float(v)}`"
    if isinstance(v, str):
        return f"string {rust_debug_str(v)}"
    if isinstance(v, list):
        return "sequence"
    return "map"


def check_value(kind: str, v: Any) -> Any:
    if kind != STRING and v is None:
        return None
    if kind in (STRING, OPT_STRING, CLEAR_STRING):
        if isinstance(v, str):
            return v
        raise BadArguments(f"invalid type: {unexpected(v)}, expected a string")
    # i64
    if isinstance(v, int) and not isinstance(v, bool):
        if I64_MIN <= v <= I64_MAX:
            return v
        if 0 <= v <= U64_MAX:
            raise BadArguments(f"invalid value: integer `{v}`, expected i64")
    raise BadArguments(f"invalid type: {unexpected(v)}, expected i64")


def parse_args(fields: list[tuple[str, str]], arguments: dict[str, Any] | None) -> dict[str, Any]:
    """Deserializes like serde: map keys in sorted order (serde_json's map is a BTreeMap), an
    unknown key or a wrong type fails at once, then the first missing required field."""
    arguments = arguments or {}
    kinds = dict(fields)
    out: dict[str, Any] = {}
    for key in sorted(arguments):
        if key not in kinds:
            names_ = [f"`{n}`" for n, _ in fields]
            if len(names_) == 1:
                expected = f"expected {names_[0]}"
            elif len(names_) == 2:
                expected = f"expected {names_[0]} or {names_[1]}"
            else:
                expected = "expected one of " + ", ".join(names_)
            raise BadArguments(f"unknown field `{key}`, {expected}")
        out[key] = check_value(kinds[key], arguments[key])
    for name, kind in fields:
        if name not in out:
            if kind == STRING:
                raise BadArguments(f"missing field `{name}`")
            out[name] = ABSENT if kind == CLEAR_STRING else None
    return out


# ---------------------------------------------------------------------------------------------
# The tools (servers/src/modules/domain_adapter/adapter.rs)
# ---------------------------------------------------------------------------------------------

SCHEMA = "https://json-schema.org/draft/2020-12/schema"


def _schema(properties: dict[str, Any], required: list[str] | None) -> dict[str, Any]:
    # Key order as the Rust server lists it (serde_json sorts keys): $schema, additionalProperties,
    # properties (sorted), required, type.
    s: dict[str, Any] = {"$schema": SCHEMA, "additionalProperties": False, "properties": dict(sorted(properties.items()))}
    if required:
        s["required"] = required
    s["type"] = "object"
    return s


def _p(description: str | None, type_: str | list[str] = "string", fmt: str | None = None) -> dict[str, Any]:
    p: dict[str, Any] = {}
    if description is not None:
        p["description"] = description
    if fmt is not None:
        p["format"] = fmt
    p["type"] = type_
    return p


CUSTOMER_REF = "Customer name or `#id`."
ASSIGNEE_REF = "Assignee's name or `#id`."
STATUS = "`open`, `in_progress`, `resolved` or `closed`."
PRIORITY = "`low`, `medium`, `high` or `urgent`."
TICKET_REF = "Ticket title or `#id`. Titles repeat: if several tickets match, retry with the `#id`."

# (name, description, input schema, fields in declaration order with their Rust types)
TOOLS: list[tuple[str, str, dict[str, Any], list[tuple[str, str]]]] = [
    (
        "find_customer",
        "One customer by name or #id, with how many of their tickets are in each status.",
        _schema({"customer": _p("Customer name or `#id`. Part of a name works if only one customer matches.")}, ["customer"]),
        [("customer", STRING)],
    ),
    (
        "find_person",
        "One person (staff user) by name or #id, with how many tickets assigned to them are in each status.",
        _schema({"person": _p("Person's name or `#id`. Part of a name works if only one person matches.")}, ["person"]),
        [("person", STRING)],
    ),
    (
        "find_tickets",
        "List tickets, newest first, with customer and assignee names. Filters: customer, assignee (names or #id), "
        "status, priority, title; paged with limit/offset.",
        _schema(
            {
                "customer": _p(CUSTOMER_REF),
                "assignee": _p(ASSIGNEE_REF),
                "status": _p(STATUS),
                "priority": _p(PRIORITY),
                "title": _p("Case-insensitive substring of the title."),
                "limit": _p("Page size, 1–200 (default 50).", "integer", "int64"),
                "offset": _p("Rows to skip (default 0).", "integer", "int64"),
            },
            None,
        ),
        [("customer", OPT_STRING), ("assignee", OPT_STRING), ("status", OPT_STRING), ("priority", OPT_STRING),
         ("title", OPT_STRING), ("limit", OPT_I64), ("offset", OPT_I64)],
    ),
    (
        "open_ticket",
        "Create a ticket, optionally for a customer and assigned to a person (names or #id). Returns it with names.",
        _schema(
            {
                "title": _p("1–200 characters."),
                "description": _p("Up to 4000 characters."),
                "priority": _p("`low`, `medium` (default), `high` or `urgent`."),
                "customer": _p(CUSTOMER_REF),
                "assignee": _p(ASSIGNEE_REF),
            },
            ["title"],
        ),
        [("title", STRING), ("description", OPT_STRING), ("priority", OPT_STRING), ("customer", OPT_STRING),
         ("assignee", OPT_STRING)],
    ),
    (
        "ticket_details",
        "One ticket by title or #id, with its customer and assignee names.",
        _schema({"ticket": _p(TICKET_REF)}, ["ticket"]),
        [("ticket", STRING)],
    ),
    (
        "update_ticket",
        "Change a ticket found by title or #id: status, priority, assignee, customer (names or #id; null "
        "unassigns or detaches), title or description. Fields left out keep their value. Returns it with names.",
        _schema(
            {
                "ticket": _p(TICKET_REF),
                "status": _p(STATUS),
                "priority": _p(PRIORITY),
                "assignee": _p("New assignee: name or `#id`, or null to unassign.", ["string", "null"]),
                "customer": _p("New customer: name or `#id`, or null to detach the customer.", ["string", "null"]),
                "new_title": _p(None),
                "description": _p(None),
            },
            ["ticket"],
        ),
        [("ticket", STRING), ("status", OPT_STRING), ("priority", OPT_STRING), ("assignee", CLEAR_STRING),
         ("customer", CLEAR_STRING), ("new_title", OPT_STRING), ("description", OPT_STRING)],
    ),
]
FIELDS = {name: fields for name, _, _, fields in TOOLS}


def without_nulls(m: dict[str, Any]) -> dict[str, Any]:
    """The object without its null fields (the backend reads an explicit null as "clear it")."""
    return {k: v for k, v in m.items() if v is not None}


async def optional_id(reference: str | None, resolve, b: BackendClient) -> int | None:
    if reference is None:
        return None
    return as_i64(get(await resolve(b, reference), "id"))


async def find_customer(b: BackendClient, a: dict[str, Any]) -> types.CallToolResult:
    c = await resolve_customer(b, a["customer"])
    counts = await counts_by_status(b, "customer_id", as_i64(get(c, "id")) or 0)
    return json_result({"customer": c, "tickets_by_status": counts})


async def find_person(b: BackendClient, a: dict[str, Any]) -> types.CallToolResult:
    p = await resolve_person(b, a["person"])
    counts = await counts_by_status(b, "assignee_id", as_i64(get(p, "id")) or 0)
    return json_result({"person": p, "assigned_tickets_by_status": counts})


async def find_tickets(b: BackendClient, a: dict[str, Any]) -> types.CallToolResult:
    customer_id = await optional_id(a["customer"], resolve_customer, b)
    assignee_id = await optional_id(a["assignee"], resolve_person, b)
    query = {
        "customer_id": customer_id, "assignee_id": assignee_id, "status": a["status"], "priority": a["priority"],
        "q": a["title"], "limit": a["limit"], "offset": a["offset"],
    }
    try:
        page = await b.get("/tickets", without_nulls(query))
    except CallError as e:
        return tool_error(str(e))
    rows = get(page, "data")
    rows = list(rows) if isinstance(rows, list) else []
    page["data"] = await with_names(b, rows)
    return json_result(page)


async def ticket_details(b: BackendClient, a: dict[str, Any]) -> types.CallToolResult:
    t = await resolve_ticket(b, a["ticket"])
    return json_result(await with_names_one(b, t))


async def open_ticket(b: BackendClient, a: dict[str, Any]) -> types.CallToolResult:
    customer_id = await optional_id(a["customer"], resolve_customer, b)
    assignee_id = await optional_id(a["assignee"], resolve_person, b)
    body = {
        "title": a["title"], "description": a["description"], "priority": a["priority"],
        "customer_id": customer_id, "assignee_id": assignee_id,
    }
    try:
        t = await b.post("/tickets", without_nulls(body))
    except CallError as e:
        return tool_error(str(e))
    return json_result(await with_names_one(b, t))


async def update_ticket(b: BackendClient, a: dict[str, Any]) -> types.CallToolResult:
    unchanged = all(a[k] is None for k in ("status", "priority", "new_title", "description"))
    if unchanged and a["assignee"] is ABSENT and a["customer"] is ABSENT:
        return tool_error("Name at least one field to change.")
    t = await resolve_ticket(b, a["ticket"])
    body = without_nulls({"status": a["status"], "priority": a["priority"], "title": a["new_title"], "description": a["description"]})
    # A reference resolves to an id; an explicit null goes to the backend as null (clear).
    if a["customer"] is not ABSENT:
        body["customer_id"] = await optional_id(a["customer"], resolve_customer, b)
    if a["assignee"] is not ABSENT:
        body["assignee_id"] = await optional_id(a["assignee"], resolve_person, b)
    try:
        t = await b.patch(f"/tickets/{display(get(t, 'id'))}", body)
    except CallError as e:
        return tool_error(str(e))
    return json_result(await with_names_one(b, t))


HANDLERS = {
    "find_customer": find_customer,
    "find_person": find_person,
    "find_tickets": find_tickets,
    "ticket_details": ticket_details,
    "open_ticket": open_ticket,
    "update_ticket": update_ticket,
}


# ---------------------------------------------------------------------------------------------
# The MCP server
# ---------------------------------------------------------------------------------------------


def build_server(backend: BackendClient) -> Server:
    tool_list = [types.Tool(name=n, description=d, input_schema=s) for n, d, s, _ in TOOLS]

    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list)

    async def on_call_tool(ctx, params: types.CallToolRequestParams):
        handler = HANDLERS.get(params.name)
        if handler is None:
            # rmcp answers an unknown tool with a JSON-RPC error, not a tool result.
            return types.ErrorData(code=types.INVALID_PARAMS, message="tool not found")
        try:
            args = parse_args(FIELDS[params.name], params.arguments)
        except BadArguments as e:
            return tool_error(f"failed to deserialize parameters: {e}")
        try:
            return await handler(backend, args)
        except Unresolved as e:
            return tool_error(str(e))

    server = Server(
        "domain_adapter",
        version="0.1.0",
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    # The SDK wraps every request in an OpenTelemetry span by default (a no-op without an
    # exporter); the Rust server has no such layer, so it is dropped.
    server.middleware = []
    return server


async def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    backend = BackendClient(os.environ.get("BACKEND_URL") or DEFAULT_BACKEND_URL)
    server = build_server(backend)
    options = server.create_initialization_options()
    # rmcp advertises `"tools": {}`; the SDK would add `"listChanged": false`, which says the same.
    if options.capabilities.tools is not None:
        options.capabilities.tools.list_changed = None
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
