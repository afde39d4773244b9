#!/usr/bin/env bash
# Installs the pinned third-party MCP peers the interop tests run against.
# (Filled in by the interop work; a no-op until then.)
set -euo pipefail
