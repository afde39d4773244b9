#!/usr/bin/env bash
# The `rootfence serve` benchmark (issue 16): many concurrent MCP Streamable HTTP sessions on
# loopback (default 200 clients x 100 requests), against a minimal native HTTP MCP server
# (direct) and through `rootfence serve -- bench_server` (one sandboxed server process per
# session), side by side in one run: every request must be answered; prints throughput,
# p50/p99 latency, session-open latency and the peak RSS of each server side (process tree).
# Builds the release binaries first. Options go to the driver (examples/bench_serve.rs):
#   --clients N (200)  --requests N (100)  --rounds N (1)
set -euo pipefail
cd "$(dirname "$0")/.."
# PROFILE=profiling builds with line tables for `perf` (docs/benchmarks.md, "Profiling");
# the figures are from the release build users install.
profile="${PROFILE:-release}"
cargo build --profile "$profile" --locked --quiet --bin rootfence --example bench_server --example bench_serve
exec target/"$profile"/examples/bench_serve "$@"
