#!/usr/bin/env bash
# The enforcement benchmark (issues 6 and 14): what rootfence's checks and audit add over its
# relay alone. Six chains against our fast server (examples/bench_server.rs), side by side:
# direct, relay-only (examples/relay_passthrough.rs: the relay with nothing deciding),
# `rootfence run --root <tmp root>` with the default policy: audited as shipped, allowed
# decisions unlogged, and allowed list entries logged each; and the floor
# (`relay_passthrough --floor <tmp root>`: the relay plus only the kernel's answer on each
# read's URI, what any check that lets the kernel decide containment pays). Prints p50/p99 of a
# resources/read of a file: URI and of a 10,000-entry resources/list page, p50 and CPU of a tools/call (the value path), rootfence's peak
# RSS, then the official Python SDK client's small read through the do-nothing byte relay,
# relay-only, the floor and rootfence (scripts/bench_sdk_read.py, pinned SDK in tests/peers/.venv), with
# each target (read p50 <= 1.10x relay-only; page < 5 ms added; RSS <= 32 MiB; SDK read
# p50 <= 1.05x the byte relay). Builds the release binaries first. Options go to the driver
# (examples/bench_enforce.rs): --requests N (2000) --warmup N (200) --lists N (40)
# --list-entries N (10000) --rounds N (3) --sdk-requests N (1000; 0 skips it)
set -euo pipefail
cd "$(dirname "$0")/.."
# PROFILE=profiling builds with line tables for `perf` (docs/benchmarks.md, "Profiling");
# the figures are from the release build users install.
profile="${PROFILE:-release}"
# The binary in a build of its own: built in one command with the examples it would take
# the dev-dependencies' features (regex-syntax's Unicode tables, through criterion's regex)
# and be larger (~450 KB) than the one users install.
cargo build --profile "$profile" --locked --quiet --bin rootfence
cargo build --profile "$profile" --locked --quiet --example bench_server --example relay_passthrough --example bench_enforce --example byte_relay
exec target/"$profile"/examples/bench_enforce "$@"
