#!/usr/bin/env bash
# The whole test suite, as README.md names it and .ci/run calls it.
# It installs the pinned third-party test peers itself (npm servers, Python mcp SDK,
# rmcp client), then runs formatting, lints and every test through the real binary.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-peers.sh

cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
if command -v cargo-nextest >/dev/null 2>&1; then
    # Plain `nextest run` (no --all-targets) builds examples/ as real binaries, which the
    # end-to-end tests run as test servers from target/debug/examples/.
    cargo nextest run --locked --no-fail-fast --no-tests=warn
else
    cargo test --locked --no-fail-fast
fi
cargo test --doc --locked
