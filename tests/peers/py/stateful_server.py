"""A minimal stdio MCP server that keeps its state in the user's home, as basic-memory
(~/.basic-memory) and serena (~/.serena/logs) do: on start it creates
$HOME/.stateful-mcp/logs and appends to a log there, and exits with an error if it cannot.
Used by tests/wrap_learn.rs to check that `rootfence wrap --learn` learns that directory
(and nothing broader). Plain Python, no SDK: one JSON-RPC message per line.

With STATEFUL_NO_STATE=1 it keeps no state (a server that starts under the default
sandbox as it is)."""

import json
import os
import sys


def main() -> int:
    if os.environ.get("STATEFUL_NO_STATE") != "1":
        logs = os.path.join(os.environ["HOME"], ".stateful-mcp", "logs")
        try:
            os.makedirs(logs, exist_ok=True)
            with open(os.path.join(logs, "server.log"), "a") as f:
                f.write("started\n")
        except OSError as e:
            print(f"stateful-mcp: cannot keep its state: {e}", file=sys.stderr)
            return 1
    for line in sys.stdin:
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "stateful-mcp", "version": "0.0.1"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "ping", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "pong"}]}
        else:
            print(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
