#!/usr/bin/env bash
# The `rootfence serve` benchmark (issues 16, 30): many concurrent MCP Streamable HTTP
# sessions on loopback (default 200 clients x 100 requests), side by side in one run against
# - direct: a minimal native HTTP MCP server (the floor for HTTP on this machine);
# - rootfence serve --root DIR --session-pool N -- bench_server (N = clients: pre-started
#   sandboxed servers, one per session), and the same with --session-pool 0;
# - supergateway 4.0.0 and mcp-proxy 6.7.19 (npm, pinned; installed by
#   scripts/install-bench-peers.sh) bridging the same bench_server over Streamable HTTP.
# Every request must be answered; prints throughput, p50/p99 latency, session-open latency
# and the peak RSS of each server side (process tree). Builds the release binaries first.
# Options go to the driver (examples/bench_serve.rs):
#   --clients N (200)  --requests N (100)  --rounds N (1)  --session-pool N (= clients)
#   --targets direct,floor-shared,floor-per-session,rootfence,rootfence-nopool,supergateway,mcp-proxy
#   (all; add baseline with --baseline OTHER/target/release/rootfence)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-bench-peers.sh
# PROFILE=profiling builds with line tables for `perf` (docs/benchmarks.md, "Profiling");
# the figures are from the release build users install.
profile="${PROFILE:-release}"
# The binary in a build of its own: built in one command with the examples it would take
# the dev-dependencies' features (regex-syntax's Unicode tables, through criterion's regex)
# and be larger (~450 KB) than the one users install.
cargo build --profile "$profile" --locked --quiet --bin rootfence
cargo build --profile "$profile" --locked --quiet --example bench_server --example bench_serve
exec target/"$profile"/examples/bench_serve "$@"
