#!/usr/bin/env python3
"""A small MCP stdio server on the official Python SDK (`mcp` 2.3.0), for interop tests that
need a peer speaking 2026-07-28.

Owned by the interop harness. The pinned npm servers speak only the handshake revisions
(their TypeScript SDK stops at 2025-11-25); the Python SDK's server serves both eras on one
stdio connection: the `initialize` handshake (2024-11-05 .. 2025-11-25) and the stateless
2026-07-28 era (`server/discover`, per-request `_meta`). Everything it returns is
deterministic, so direct and wrapped transcripts compare exactly.

Usage: server.py  (speaks MCP on stdin/stdout; logs, if any, go to stderr)
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer("rootfence-interop-py-server", instructions="A deterministic test server.")


@server.resource("py://doc/readme", name="readme", mime_type="text/plain", description="A text document")
def readme() -> str:
    return "This is the readme of the Python interop server.\n"


@server.resource("py://doc/blob", name="blob", mime_type="application/octet-stream", description="Bytes")
def blob() -> bytes:
    return bytes(range(256))


@server.resource("py://item/{item_id}", name="item", mime_type="text/plain", description="An item by id")
def item(item_id: str) -> str:
    return f"Item {item_id}"


@server.tool(description="Echoes back the input")
def echo(message: str) -> str:
    return f"Echo: {message}"


@server.tool(description="Adds two integers")
def add(a: int, b: int) -> int:
    return a + b


@server.prompt(description="Greets someone by name")
def greet(name: str) -> str:
    return f"Please greet {name} warmly."


if __name__ == "__main__":
    server.run("stdio")
