#!/usr/bin/env bash
# The telemetry benchmark (issue 15): `rootfence run` around the same fast server with
# telemetry off, with an OTLP collector up, down (connection refused) and hung (accepts,
# never answers), side by side in one run (examples/bench_telemetry.rs). Prints p50/p99/mean
# round-trip latency of a ping carrying `_meta.traceparent` and of a checked
# `resources/read`, and how long each session took to end once the host closed its input.
# Builds the release binaries first. Options go to the driver:
#   --requests N (3000)  --warmup N (300)  --rounds N (3)
set -euo pipefail
cd "$(dirname "$0")/.."
# PROFILE=profiling builds with line tables for `perf` (docs/benchmarks.md, "Profiling");
# the figures are from the release build users install.
profile="${PROFILE:-release}"
# The binary in a build of its own: built in one command with the examples it would take
# the dev-dependencies' features (regex-syntax's Unicode tables, through criterion's regex)
# and be larger (~450 KB) than the one users install.
cargo build --profile "$profile" --locked --quiet --bin rootfence
cargo build --profile "$profile" --locked --quiet --example bench_server --example bench_telemetry
exec target/"$profile"/examples/bench_telemetry "$@"
