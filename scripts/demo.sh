#!/usr/bin/env bash
# The rootfence demo: builds rootfence and the demo programs (release), then runs a scripted
# MCP host against a deliberately naive filesystem server, directly and through
# `rootfence run` with the built-in default policy, and shows the audit log. Needs only cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet --bin rootfence --example naive_fs_server --example demo
exec target/release/examples/demo "$@"
