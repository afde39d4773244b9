#!/usr/bin/env bash
# The whole test suite, as README.md names it and .ci/run calls it.
# It installs the pinned third-party test peers itself (npm servers, Python mcp SDK,
# rmcp client), then runs formatting, lints and every test through the real binary.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-peers.sh

cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
# The small build (no OpenTelemetry, no `serve`; Cargo.toml, [features]) still builds, lint
# clean: the library and binary only (the tests exercise the default features).
cargo clippy --no-default-features --locked -- -D warnings
# The fuzz targets still build: a plain `cargo check` of the fuzz crate works on stable
# (only `cargo fuzz` needs nightly flags, see fuzz/README.md). Sharing target/ reuses the
# dependencies clippy just checked; libfuzzer-sys's build script needs a C++ compiler.
cargo check --manifest-path fuzz/Cargo.toml --target-dir target
if command -v cargo-nextest >/dev/null 2>&1; then
    # Plain `nextest run` (no --all-targets) builds examples/ as real binaries, which the
    # end-to-end tests run as test servers from target/debug/examples/.
    cargo nextest run --locked --no-fail-fast --no-tests=warn
else
    cargo test --locked --no-fail-fast
fi
cargo test --doc --locked
# The API docs build without warnings (broken or private intra-doc links fail).
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked --quiet
