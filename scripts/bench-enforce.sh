#!/usr/bin/env bash
# The enforcement benchmark (issue 6): what rootfence's checks add over its relay alone.
# Four chains against our fast server (examples/bench_server.rs), side by side: direct,
# relay-only (examples/relay_passthrough.rs: the relay with nothing deciding), and
# `rootfence run --root <tmp root>` with the default policy, allowed decisions audited or not.
# Prints p50/p99 of a resources/read of a file: URI and of a 10,000-entry resources/list
# page, and the two figures issue 6 sets targets for (read p50 <= 1.10x relay-only; the page
# filter < 5 ms). Builds the release binaries first. Options go to the driver
# (examples/bench_enforce.rs): --requests N (2000) --warmup N (200) --lists N (40)
# --list-entries N (10000) --rounds N (3)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet --bin rootfence \
    --example bench_server --example relay_passthrough --example bench_enforce
exec target/release/examples/bench_enforce "$@"
