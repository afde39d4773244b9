#!/usr/bin/env bash
# The relay benchmark (issue 2): direct vs through the do-nothing byte relay (the floor) vs
# through `rootfence run` vs rootfence with the content tripwire armed (a root holding a .env
# and a PEM key; issue 13), against our own fast server (examples/bench_server.rs), in one run.
# Prints p50/p99 round-trip latency of small requests and MiB/s of 10 MiB resources/read.
# Builds the release binaries first. Options go to the driver (examples/bench_relay.rs):
#   --requests N (5000)  --warmup N (500)  --reads N (20)  --payload-mib N (10)  --rounds N (3)
#   --pipeline K (1: one big read in flight at a time)  --payload-text (realistic text payload)
set -euo pipefail
cd "$(dirname "$0")/.."
# PROFILE=profiling builds with line tables for `perf` (docs/benchmarks.md, "Profiling");
# the figures are from the release build users install.
profile="${PROFILE:-release}"
# The binary in a build of its own: built in one command with the examples it would take
# the dev-dependencies' features (regex-syntax's Unicode tables, through criterion's regex)
# and be larger (~450 KB) than the one users install.
cargo build --profile "$profile" --locked --quiet --bin rootfence
cargo build --profile "$profile" --locked --quiet --example bench_server --example byte_relay --example bench_relay
exec target/"$profile"/examples/bench_relay "$@"
