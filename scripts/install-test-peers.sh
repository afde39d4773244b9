#!/usr/bin/env bash
# Installs the pinned third-party MCP peers the interop and compatibility tests (tests/interop.rs,
# tests/compat.rs) run against:
#   - npm:  @modelcontextprotocol/server-everything 2025.11.25 and 2026.8.31,
#           @modelcontextprotocol/server-filesystem 2026.8.31,
#           @modelcontextprotocol/server-memory 2026.8.31 and @playwright/mcp 0.0.83, from
#           tests/peers/node/package-lock.json (npm ci) into tests/peers/node/node_modules;
#   - PyPI: the official `mcp` SDK 2.3.0, the reference git server mcp-server-git 2026.10.19,
#           the reference time server mcp-server-time 2026.10.19, and their dependencies,
#           every file hash-pinned in tests/peers/python/requirements.txt, into the venv
#           tests/peers/.venv;
#   - crates.io: the rmcp client (tests/peers/rmcp-client, its own Cargo.lock and target dir,
#           never part of the rootfence build), built with `cargo build --release --locked`;
#   - Debian: the chromium package (/usr/bin/chromium), the browser Playwright MCP drives in
#           the compatibility suite (Playwright's own browser builds come from a CDN, not a
#           registry), with apt-get when it is missing and we are root (if apt-get fails,
#           a warning: the browser cases skip, saying why).
#           ROOTFENCE_PEERS_NO_APT=1 skips it (the browser cases then skip, saying why).
#   - PyPI: kubernetes-validate 1.37.0 (offline, strict schema validation of
#           deploy/kubernetes/*.yaml), hash-pinned in tests/peers/deploy/requirements.txt,
#           into its own venv tests/peers/.venv-deploy;
#   - Debian: nginx-light (/usr/sbin/nginx), the load balancer in front of three `rootfence
#           serve` replicas in tests/serve_fleet.rs, likewise (the nginx case skips without it).
# Each part is skipped when a stamp file shows it was installed from the same lock files with
# the same toolchain, so a second run takes well under a second. Everything it installs is
# git-ignored. Set ROOTFENCE_PEERS_FORCE=1 to reinstall everything.
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS=tests/peers

log() { printf 'install-test-peers: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

need() {
    command -v "$1" >/dev/null 2>&1 || die "$1 not found on PATH; $2"
}

# Stamp key: the hashes of the files that define an install plus a tool version line.
key_of() {
    local tool_version=$1; shift
    { printf '%s\n' "$tool_version"; sha256sum "$@"; } | sha256sum | cut -d' ' -f1
}

fresh() { # fresh STAMP KEY: the stamp exists and holds KEY (then it is touched, because
    # tests/interop.rs takes a lock file newer than its stamp as a sign of a stale install)
    [[ "${ROOTFENCE_PEERS_FORCE:-0}" != 1 && -f "$1" && "$(cat "$1")" == "$2" ]] && touch "$1"
}

install_node() {
    need node "install Node.js 20 or later (the pinned servers need node >= 20)"
    need npm "install npm (it comes with Node.js)"
    local dir=$PEERS/node stamp=$PEERS/node/node_modules/.rootfence-stamp key
    key=$(key_of "node $(node --version)" "$dir/package.json" "$dir/package-lock.json")
    if fresh "$stamp" "$key"; then
        log "npm servers: up to date"
        return
    fi
    log "npm servers: npm ci in $dir"
    # --ignore-scripts: none of the pinned packages needs an install script, and the test
    # peers are third-party code that has no business running at install time.
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
    for entry in everything-2025/dist/index.js everything-latest/dist/index.js \
        @modelcontextprotocol/server-filesystem/dist/index.js \
        @modelcontextprotocol/server-memory/dist/index.js @playwright/mcp/cli.js; do
        [[ -f "$dir/node_modules/$entry" ]] || die "npm ci did not install $entry"
    done
    printf '%s\n' "$key" >"$stamp"
}

install_python() {
    local python=${ROOTFENCE_PEERS_PYTHON:-python3}
    need "$python" "install Python 3.11 or later (the lock is resolved for 3.11), or point ROOTFENCE_PEERS_PYTHON at one"
    local venv=$PEERS/.venv req=$PEERS/python/requirements.txt stamp key
    stamp=$venv/.rootfence-stamp
    key=$(key_of "$("$python" --version 2>&1)" "$req")
    if fresh "$stamp" "$key" && [[ -x "$venv/bin/python" ]]; then
        log "python mcp SDK: up to date"
        return
    fi
    log "python mcp SDK: creating $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    # --require-hashes: every file must match the lock's sha256; --only-binary: no sdist
    # builds (no build-time code from the registry); --no-deps: the lock is complete.
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --require-hashes --only-binary :all: --no-deps -r "$req" >&2
    "$venv/bin/python" -c 'import mcp, mcp_types, mcp_server_git, mcp_server_time' || die "the mcp SDK, mcp-server-git or mcp-server-time does not import in $venv"
    printf '%s\n' "$key" >"$stamp"
}

install_rmcp_client() {
    need cargo "install a Rust toolchain (rustup)"
    local dir=$PEERS/rmcp-client target=$PEERS/rmcp-client/target stamp key
    stamp=$target/.rootfence-stamp
    # shellcheck disable=SC2046 # word splitting of the file list is intended
    key=$(key_of "$(cargo --version)" "$dir/Cargo.toml" "$dir/Cargo.lock" $(find "$dir/src" -name '*.rs' | sort))
    if fresh "$stamp" "$key" && [[ -x "$target/release/rmcp-client" ]]; then
        log "rmcp client: up to date"
        return
    fi
    log "rmcp client: cargo build --release --locked in $dir"
    # Its own manifest, lock file and target dir: nothing here touches the rootfence build.
    cargo build --quiet --release --locked --manifest-path "$dir/Cargo.toml" --target-dir "$target" >&2
    [[ -x "$target/release/rmcp-client" ]] || die "cargo did not produce $target/release/rmcp-client"
    printf '%s\n' "$key" >"$stamp"
}

install_chromium() {
    if [[ -x /usr/bin/chromium ]]; then
        log "chromium: $(/usr/bin/chromium --version 2>/dev/null || echo present)"
        return
    fi
    if [[ "${ROOTFENCE_PEERS_NO_APT:-0}" == 1 ]]; then
        log "chromium: not installed (ROOTFENCE_PEERS_NO_APT=1); the browser cases will skip"
        return
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        log "warning: /usr/bin/chromium is missing and there is no apt-get: install Chromium at /usr/bin/chromium for the browser cases (they skip until then)"
        return
    fi
    if [[ $(id -u) != 0 ]]; then
        log "warning: /usr/bin/chromium is missing: run 'sudo apt-get install chromium' for the browser cases (they skip until then)"
        return
    fi
    log "chromium: apt-get install chromium"
    # A browser the apt mirror cannot deliver costs the browser cases only (they skip and say
    # why), never the rest of the suite.
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >&2; }; then
        log "warning: apt-get could not install chromium; the browser cases will skip"
        return
    fi
    [[ -x /usr/bin/chromium ]] || log "warning: apt-get did not install /usr/bin/chromium; the browser cases will skip"
}

install_deploy_validator() {
    local python=${ROOTFENCE_PEERS_PYTHON:-python3}
    local venv=$PEERS/.venv-deploy req=$PEERS/deploy/requirements.txt stamp key
    stamp=$venv/.rootfence-stamp
    key=$(key_of "$("$python" --version 2>&1)" "$req")
    if fresh "$stamp" "$key" && [[ -x "$venv/bin/kubernetes-validate" ]]; then
        log "kubernetes-validate: up to date"
        return
    fi
    log "kubernetes-validate: creating $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --require-hashes --only-binary :all: --no-deps -r "$req" >&2
    "$venv/bin/kubernetes-validate" --version >/dev/null || die "kubernetes-validate does not run in $venv"
    printf '%s\n' "$key" >"$stamp"
}

install_nginx() {
    if [[ -x /usr/sbin/nginx ]]; then
        log "nginx: $(/usr/sbin/nginx -v 2>&1 || echo present)"
        return
    fi
    if [[ "${ROOTFENCE_PEERS_NO_APT:-0}" == 1 || $(id -u) != 0 ]] ||
        ! command -v apt-get >/dev/null 2>&1; then
        log "warning: /usr/sbin/nginx is missing: run 'sudo apt-get install nginx-light' for the load balancer case of tests/serve_fleet.rs (it skips until then)"
        return
    fi
    log "nginx: apt-get install nginx-light"
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light >&2; }; then
        log "warning: apt-get could not install nginx-light; the nginx case will skip"
    fi
}

install_node
install_python
install_rmcp_client
install_chromium
install_nginx
install_deploy_validator
log "all test peers installed"
