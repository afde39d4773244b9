#!/usr/bin/env python3
"""The official Python SDK client's small-resource read through several chains, side by side.

Run by examples/bench_enforce.rs (scripts/bench-enforce.sh) with the pinned SDK's Python
(tests/peers/.venv). Usage:

    bench_sdk_read.py --uri URI --requests N --warmup N -- LABEL=CMD ARGS... ::: LABEL=CMD ...

One `mcp` `ClientSession` per chain (each launched over stdio as a host launches a server),
all in one event loop; every measured read goes to each chain in turn (rotating which goes
first), so load from elsewhere on the machine falls on all chains alike. Prints one JSON
object: per label, the sorted read latencies in microseconds.
"""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import AsyncExitStack

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def parse(argv: list[str]) -> tuple[dict[str, str], list[tuple[str, list[str]]]]:
    opts: dict[str, str] = {}
    i = 0
    while i < len(argv) and argv[i] != "--":
        opts[argv[i].lstrip("-")] = argv[i + 1]
        i += 2
    chains: list[tuple[str, list[str]]] = []
    cur: list[str] = []
    for a in argv[i + 1:] + [":::"]:
        if a == ":::":
            if cur:
                label, _, first = cur[0].partition("=")
                chains.append((label, [first] + cur[1:]))
            cur = []
        else:
            cur.append(a)
    return opts, chains


async def main() -> None:
    opts, chains = parse(sys.argv[1:])
    uri = opts["uri"]
    n = int(opts.get("requests", "1000"))
    warmup = int(opts.get("warmup", "100"))
    async with AsyncExitStack() as stack:
        sessions = []
        for label, cmd in chains:
            params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
            read, write = await stack.enter_async_context(stdio_client(params, errlog=sys.stderr))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions.append((label, session))
        samples: dict[str, list[float]] = {label: [] for label, _ in sessions}
        k = len(sessions)
        for i in range(warmup + n):
            for j in range(k):
                label, session = sessions[(i + j) % k]
                t = time.perf_counter()
                result = await session.read_resource(uri)
                dt = time.perf_counter() - t
                if not result.contents:
                    raise SystemExit(f"{label}: empty read of {uri}")
                if i >= warmup:
                    samples[label].append(dt * 1e6)
    print(json.dumps({label: sorted(v) for label, v in samples.items()}))


if __name__ == "__main__":
    anyio.run(main)
