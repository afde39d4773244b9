#!/usr/bin/env python3
"""Records one MCP server's `tools/list` into a fixture of tests/fixtures/tools_list/
(`{"serverInfo", "tools"}`, indent 1, the server's own key order), for the tool-argument
inference's table test (src/toolargs/tests.rs).

    scripts/record-tools-list.py tests/fixtures/tools_list/NAME.json -- SERVER COMMAND...

Run the pinned server directly (not through rootfence), started as the compatibility suite
starts it (tests/compat.rs), then regenerate inferred.txt as src/toolargs/tests.rs says.
"""
import json
import subprocess
import sys

args = sys.argv[1:]
if len(args) < 3 or args[1] != "--":
    sys.exit("usage: scripts/record-tools-list.py OUT.json -- SERVER COMMAND...")
out, cmd = args[0], args[2:]
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def send(m):
    p.stdin.write(json.dumps(m) + "\n")
    p.stdin.flush()


def recv(id):
    while True:
        line = p.stdout.readline()
        if not line:
            sys.exit("the server closed its stdout")
        m = json.loads(line)
        if m.get("id") == id:
            if "error" in m:
                sys.exit(f"error: {m['error']}")
            return m["result"]


send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "rootfence-fixture-recorder", "version": "1"}}})
init = recv(1)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
tools, cursor, n = [], None, 2
while True:
    send({"jsonrpc": "2.0", "id": n, "method": "tools/list",
          "params": {"cursor": cursor} if cursor else {}})
    r = recv(n)
    n += 1
    tools += r["tools"]
    cursor = r.get("nextCursor")
    if not cursor:
        break
p.stdin.close()
p.wait(timeout=30)
with open(out, "w") as f:
    f.write(json.dumps({"serverInfo": init["serverInfo"], "tools": tools}, indent=1) + "\n")
