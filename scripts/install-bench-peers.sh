#!/usr/bin/env bash
# Installs the MCP bridges the `rootfence serve` benchmark (scripts/bench-serve.sh) runs side
# by side with rootfence: supergateway 4.0.0 and mcp-proxy 6.7.19, both from npm, pinned by
# tests/peers/bench/package-lock.json (npm ci) into tests/peers/bench/node_modules
# (git-ignored). Benchmark-only: the test suite does not need them, so
# scripts/install-test-peers.sh leaves them out. Skipped when a stamp shows the same lock
# was installed with the same node, so a second run takes well under a second. Set
# ROOTFENCE_PEERS_FORCE=1 to reinstall.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=tests/peers/bench
stamp=$dir/node_modules/.rootfence-stamp

log() { printf 'install-bench-peers: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v node >/dev/null 2>&1 || die "node not found on PATH; install Node.js 20 or later"
command -v npm >/dev/null 2>&1 || die "npm not found on PATH; it comes with Node.js"
key=$({ node --version; sha256sum "$dir/package.json" "$dir/package-lock.json"; } | sha256sum | cut -d' ' -f1)
if [[ "${ROOTFENCE_PEERS_FORCE:-0}" != 1 && -f "$stamp" && "$(cat "$stamp")" == "$key" ]]; then
    log "bridges: up to date"
    exit 0
fi
log "bridges: npm ci in $dir"
# --ignore-scripts: neither bridge needs an install script, and third-party code has no
# business running at install time.
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
for entry in supergateway/dist/index.js mcp-proxy/dist/bin/mcp-proxy.mjs; do
    [[ -f "$dir/node_modules/$entry" ]] || die "npm ci did not install $entry"
done
for pin in supergateway@4.0.0 mcp-proxy@6.7.19; do
    name=${pin%@*} version=${pin#*@}
    got=$(node -p "require('./$dir/node_modules/$name/package.json').version")
    [[ "$got" == "$version" ]] || die "$name is $got, not the pinned $version"
done
printf '%s\n' "$key" >"$stamp"
