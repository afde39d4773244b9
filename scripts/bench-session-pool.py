#!/usr/bin/env python3
"""What idle pre-started servers cost (`rootfence serve --session-pool N`, issue 30).

For each pool size, starts `rootfence serve --root DIR --session-pool N -- SERVER...`, waits
until /metrics says the pool is full, lets it settle, then measures the whole process tree
(rootfence and every descendant): resident memory (sum of VmRSS) and the CPU time it uses
over an idle window (utime + stime from /proc). Prints one row per size and the cost per
pooled server against size 0.

    scripts/bench-session-pool.py [--sizes 0,2,8] [--idle 20] [--bin PATH] [-- SERVER...]

Default server: the reference filesystem server from tests/peers/node (Node.js), as a
deployment would serve it. Uses target/release/rootfence (build it first) unless --bin.
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")


def tree(pid):
    children = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            stat = open(f"/proc/{p}/stat").read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(p))
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(children.get(p, []))
    return out


def rss(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cpu(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / TICK
    except OSError:
        return 0.0


def metric(addr, name):
    body = urllib.request.urlopen(f"http://{addr}/metrics", timeout=5).read().decode()
    m = re.search(rf"^{name} (\d+)$", body, re.M)
    return int(m.group(1)) if m else 0


def measure(binary, size, server, idle):
    d = tempfile.mkdtemp(prefix="pool-cost-")
    proc = subprocess.Popen(
        [binary, "serve", "--listen", "127.0.0.1:0",
         "--root", d, "--session-pool", str(size), "--audit-log", os.path.join(d, "a.jsonl"),
         "--", *server],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    addr = None
    for line in proc.stderr:
        m = re.search(r"http://([^/]+)/mcp", line)
        if m:
            addr = m.group(1)
            break
    if addr is None:
        sys.exit("rootfence serve printed no address")
    deadline = time.time() + 120
    while metric(addr, "rootfence_session_pool_ready") < size:
        if time.time() > deadline:
            sys.exit(f"the pool of {size} did not fill in 120 s")
        time.sleep(0.1)
    time.sleep(10)  # let the servers finish starting up
    pids = tree(proc.pid)
    cpu0 = sum(cpu(p) for p in pids)
    time.sleep(idle)
    pids = tree(proc.pid)
    cpu1 = sum(cpu(p) for p in pids)
    total = sum(rss(p) for p in pids)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    return len(pids), total, (cpu1 - cpu0) / idle


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="0,2,8")
    ap.add_argument("--idle", type=float, default=20.0)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/rootfence"))
    ap.add_argument("server", nargs="*")
    a = ap.parse_args()
    server = a.server or ["node", os.path.join(
        ROOT, "tests/peers/node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")]
    print(f"server: {' '.join(server)}; idle window {a.idle:.0f} s")
    print(f"{'pool':>5} {'processes':>9} {'tree RSS MiB':>12} {'CPU % of a core':>15}")
    rows = []
    for size in (int(s) for s in a.sizes.split(",")):
        n, total, load = measure(a.bin, size, server, a.idle)
        rows.append((size, n, total, load))
        print(f"{size:>5} {n:>9} {total / 2**20:>12.1f} {load * 100:>15.2f}")
    base = rows[0]
    for size, n, total, load in rows[1:]:
        if size > base[0]:
            per = (total - base[2]) / (size - base[0]) / 2**20
            print(f"per pooled server (size {size} vs {base[0]}): {per:.1f} MiB, "
                  f"{(n - base[1]) / (size - base[0]):.0f} processes, "
                  f"{(load - base[3]) * 100 / (size - base[0]):.3f}% of a core")


if __name__ == "__main__":
    main()
