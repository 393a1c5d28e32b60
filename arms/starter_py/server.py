"""starter_py: the smallest external arm, one generic tool over the backend's HTTP API.

`call_api(method, path, body)` sends one request to the API at BACKEND_URL (the only variable the
harness passes) and returns the answer's body as it came: raw records, no design of its own. That
makes it a *control*. Serves MCP over stdio with the official MCP Python SDK: stdout is the
transport, so nothing else may be printed there (logs go to stderr).

Copy this folder to start your own arm: docs/adding-an-external-arm.md walks through it.
"""

import os
from typing import Any

import httpx2 as httpx  # the HTTP client the SDK itself depends on
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

BACKEND_URL = os.environ.get("BACKEND_URL", "http://127.0.0.1:8080").rstrip("/")
METHODS = ("GET", "POST", "PATCH", "DELETE")

app = MCPServer("starter_py", version="0.1.0")
# trust_env=False: no proxy or netrc variables are read.
api = httpx.AsyncClient(base_url=BACKEND_URL, timeout=10, trust_env=False)


DESCRIPTION = """Send one request to the company's REST API and return its JSON answer.
Collections (GET lists one, filters as query parameters, paged with limit/offset; GET <collection>/{id} reads one record): /customers, /users, /tickets, /notifications, /repos, /change_requests (with /change_requests/{id}/comments and /reviews), /runbooks, /services, /deploys.
Writes: POST /tickets, /notifications, /deploys; PATCH /tickets/{id}, /users/{id}, /notifications/{id}, /deploys/{id}; DELETE /tickets/{id}. `body` is the JSON object sent with POST and PATCH.
GET /openapi.json describes every path and parameter. Example: method "GET", path "/runbooks?service=auth&q=latency"."""


@app.tool(description=DESCRIPTION, structured_output=False)
async def call_api(method: str, path: str, body: dict[str, Any] | None = None) -> str:
    method = method.upper()
    if method not in METHODS:
        raise ToolError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    if not path.startswith("/"):
        raise ToolError(f"path must start with '/', as in /tickets?status=open; got {path!r}")
    try:
        resp = await api.request(method, path, json=body)
    except httpx.HTTPError as e:
        raise ToolError(f"the API at {BACKEND_URL} could not be reached: {e}") from e
    if resp.status_code >= 400:
        raise ToolError(f"{method} {path} failed with HTTP {resp.status_code}: {resp.text}")
    return resp.text


if __name__ == "__main__":
    app.run()  # stdio
