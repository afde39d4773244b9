#!/usr/bin/env python3
"""An MCP stdio server on the official Python SDK (`mcp` 2.3.0) that serves the files of its
client's roots as `file:` resources, and needs a setting from its environment to start.

Owned by the compatibility suite (tests/compat.rs). It stands for the common shape of a
third-party server a user adds to a host config: an API token in the entry's `env` (it exits
before `initialize` without it, as such servers do), and files found through the host's roots
(`roots/list`), not through its command line.

- `resources/list`: every regular file under each root, in sorted order, skipping names that
  start with a dot (as file browsers do); the URI is the file's `file:` URI.
- `resources/read`: a `file:` URI of a file inside one of the roots (the server's own check,
  on the resolved path); anything else is a JSON-RPC error.
- `tools/call status`: whether the token is the one the test configured, and how many roots
  the client gave (never the token itself).

Usage: FILES_SERVER_TOKEN=... roots_files_server.py  (speaks MCP on stdin/stdout)
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

TOKEN = os.environ.get("FILES_SERVER_TOKEN")
if not TOKEN:
    sys.exit("roots_files_server: FILES_SERVER_TOKEN is not set; add it to the server's `env` in the host config")

import anyio  # noqa: E402 (after the check: a misconfigured server exits before loading the SDK)
import mcp_types as types  # noqa: E402
from mcp.server.lowlevel.server import Server  # noqa: E402
from mcp.server.stdio import stdio_server  # noqa: E402
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError  # noqa: E402

# roots/list is deprecated for 2026-07-28 only; this server speaks the handshake revisions.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

# The value the test's host entry sets; any other value is reported, never echoed.
EXPECTED_TOKEN = "compat-token-5d1e"
INVALID_PARAMS = -32602


async def roots(ctx: Any) -> list[Path]:
    """The client's roots that are `file:` directories, resolved."""
    result = await ctx.session.list_roots()
    out = []
    for root in result.roots:
        uri = urlparse(str(root.uri))
        if uri.scheme == "file":
            out.append(Path(unquote(uri.path)).resolve())
    return out


def files_under(root: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found.extend(Path(dirpath, f) for f in sorted(filenames) if not f.startswith("."))
    return found


async def list_resources(ctx: Any, _params: Any) -> types.ListResourcesResult:
    resources = []
    for root in await roots(ctx):
        for path in files_under(root):
            resources.append(
                types.Resource(
                    uri=path.as_uri(),
                    name=str(path.relative_to(root)),
                    mime_type="text/plain",
                )
            )
    return types.ListResourcesResult(resources=resources)


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = urlparse(str(params.uri))
    if uri.scheme != "file":
        raise MCPError(code=INVALID_PARAMS, message=f"not a file: URI: {params.uri}")
    path = Path(unquote(uri.path)).resolve()
    if not any(path.is_relative_to(root) for root in await roots(ctx)):
        raise MCPError(code=INVALID_PARAMS, message=f"{path} is outside the client's roots")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise MCPError(code=INVALID_PARAMS, message=f"cannot read {path}: {e.strerror}") from e
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=params.uri, text=text, mime_type="text/plain")]
    )


STATUS_TOOL = types.Tool(
    name="status",
    description="Whether the server is configured, and how many roots the client gave",
    input_schema={"type": "object", "properties": {}},
)


async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[STATUS_TOOL])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name != "status":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"unknown tool {params.name}")], is_error=True
        )
    configured = "configured" if TOKEN == EXPECTED_TOKEN else "configured with another token"
    text = f"{configured}; {len(await roots(ctx))} root(s)"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server(
    "rootfence-compat-roots-files",
    version="1",
    on_list_resources=list_resources,
    on_read_resource=read_resource,
    on_list_tools=list_tools,
    on_call_tool=call_tool,
)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
