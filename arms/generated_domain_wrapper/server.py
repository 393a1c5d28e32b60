"""A control generated at start-up from the backend's OpenAPI document by FastMCP's OpenAPI
provider (fastmcp 4.2.3): one tool per operation, named by its operation id, with the
operation's parameters and body fields as arguments, each call an HTTP request to the backend.
Nothing here is written per operation: this is the server a team gets when it points a
generator at its API. The document is the committed snapshot `openapi.json` (the tests check it
against the backend's own), so the server starts without the backend and lists the same tools
whatever backend it is given.
"""

import json
import os
import pathlib

import httpx2
from fastmcp import FastMCP
from fastmcp.server.providers.openapi import OpenAPIProvider

SPEC = json.loads((pathlib.Path(__file__).parent / "openapi.json").read_text())

# The same bound on a backend request as the built-in servers' (10 s).
client = httpx2.AsyncClient(base_url=os.environ["BACKEND_URL"], timeout=10.0)
mcp = FastMCP("generated_domain_wrapper", providers=[OpenAPIProvider(openapi_spec=SPEC, client=client)])

if __name__ == "__main__":
    # stdio; no banner on stderr (FASTMCP_SHOW_SERVER_BANNER, FASTMCP_CHECK_FOR_UPDATES in arm.toml
    # keep it from looking for a newer release on PyPI at every start, too).
    mcp.run(show_banner=False)
