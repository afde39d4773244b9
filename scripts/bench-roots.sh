#!/usr/bin/env bash
# The live-roots benchmark (issue 11): start-up with and without rootfence's early roots
# question, and the time a server generation switch takes (list_changed to the first answer
# under the new grants), against the test server under the default sandbox. Builds the
# release binaries first. Options go to the driver (examples/bench_roots.rs): --rounds N (30)
set -euo pipefail
cd "$(dirname "$0")/.."
# PROFILE=profiling builds with line tables for `perf` (docs/benchmarks.md, "Profiling");
# the figures are from the release build users install.
profile="${PROFILE:-release}"
cargo build --profile "$profile" --locked --quiet --bin rootfence --example test_server --example bench_roots
exec target/"$profile"/examples/bench_roots "$@"
