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
# The binary in a build of its own: built in one command with the examples it would take
# the dev-dependencies' features (regex-syntax's Unicode tables, through criterion's regex)
# and be larger (~450 KB) than the one users install.
cargo build --profile "$profile" --locked --quiet --bin rootfence
cargo build --profile "$profile" --locked --quiet --example test_server --example bench_roots
exec target/"$profile"/examples/bench_roots "$@"
