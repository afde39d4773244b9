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
#   - PyPI: uv 0.13.8 (hash-locked, tests/peers/uv/requirements.txt) into tests/peers/uv/venv,
#           and the uv cache tests/peers/uv/cache filled by running each server of
#           tests/peers/uv/servers.txt once with uvx (mcp-server-git, mcp-server-sqlite,
#           markitdown-mcp; about 450 MB), so
#           that the compatibility suite's `uvx` cases run offline; then, into the same
#           cache, basic-memory 0.24.1 (with the first python3.12 on PATH) and serena-agent
#           2.1.0 (tests/peers/uv/servers-long-tail.txt, about 650 MB more);
#   - PyPI: pipx 1.18.4 (hash-locked, tests/peers/pipx/requirements.txt) into
#           tests/peers/pipx/venv, and `pipx install mcp-server-time==2026.10.19` into
#           tests/peers/pipx/home (its dependencies resolved by pipx, binary wheels only);
#   - crates.io: the rmcp client (tests/peers/rmcp-client, its own Cargo.lock and target dir,
#           never part of the rootfence build), built with `cargo build --release --locked`;
#   - Debian: the chromium package (/usr/bin/chromium), the browser Playwright MCP drives in
#           the compatibility suite (Playwright's own browser builds come from a CDN, not a
#           registry), with apt-get when it is missing and we are root (if apt-get fails,
#           a warning: the browser cases skip, saying why).
#           ROOTFENCE_PEERS_NO_APT=1 skips it (the browser cases then skip, saying why).
#           Chromium also renders `rootfence audit report --html` in tests/audit_report.rs;
#   - Debian: the rsyslog package (/usr/sbin/rsyslogd), the real syslog receiver
#           tests/audit_syslog.rs starts on a loopback port with a config of its own (the
#           package's own service is not used), the same way and with the same fallbacks.
#   - PyPI: kubernetes-validate 1.37.0 (offline, strict schema validation of
#           deploy/kubernetes/*.yaml), hash-pinned in tests/peers/deploy/requirements.txt,
#           into its own venv tests/peers/.venv-deploy;
#   - Debian: nginx-light (/usr/sbin/nginx), the load balancer in front of three `rootfence
#           serve` replicas in tests/serve_fleet.rs, likewise (the nginx case skips without it).
#   - npm:  the npx cache tests/peers/npx/cache, filled by running each spec of
#           tests/peers/npx/packages.txt once with `npx` (install scripts off):
#           @wonderwhy-er/desktop-commander 0.2.52 and mcp-obsidian 1.0.0 (about 430 MB),
#           so that the compatibility suite's `npx -y` cases run offline;
#   - npm:  pnpm 12.21.0 (tests/peers/pnpm/package.json, exact versions: npm 11 cannot
#           write a lock for pnpm's platform packages that `npm ci` accepts) into
#           tests/peers/pnpm/node_modules, and a pnpm home tests/peers/pnpm/home (its
#           `.cache/pnpm` dlx cache and `.local/share/pnpm/store`) filled by one
#           `pnpm dlx @modelcontextprotocol/server-filesystem@2026.8.31`, so that the
#           suite's `pnpm dlx` case runs offline;
#   - npm:  bun 1.4.5 (tests/peers/bun/package.json) into tests/peers/bun/node_modules the
#           same way (its own install script links the native binary of @oven/bun-linux-*),
#           and a bun home tests/peers/bun/home (`.bun/install/cache`) filled by one
#           `bunx @modelcontextprotocol/server-filesystem@2026.8.31`, for the `bunx` case;
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

install_uv() {
    local python=${ROOTFENCE_PEERS_PYTHON:-python3}
    local dir=$PEERS/uv venv=$PEERS/uv/venv cache=$PEERS/uv/cache stamp key
    stamp=$dir/.rootfence-stamp
    key=$(key_of "$("$python" --version 2>&1)" "$dir/requirements.txt" "$dir/servers.txt")
    if fresh "$stamp" "$key" && [[ -x "$venv/bin/uvx" && -d "$cache" ]]; then
        log "uv and its servers' cache: up to date"
        return
    fi
    log "uv: creating $venv"
    rm -rf "$venv" "$cache"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --require-hashes --only-binary :all: --no-deps -r "$dir/requirements.txt" >&2
    [[ -x "$venv/bin/uv" && -x "$venv/bin/uvx" ]] || die "pip did not install uv and uvx in $venv"
    local exclude_newer
    exclude_newer=$(sed -n 's/^# exclude-newer: //p' "$dir/servers.txt")
    [[ -n "$exclude_newer" ]] || die "$dir/servers.txt names no exclude-newer date"
    # Each server once, so the suite's runs resolve and install from this cache offline.
    # The python uv picks is the first python3 on PATH, as in the suite.
    local line words
    while read -r line; do
        [[ -z "$line" || "$line" == \#* ]] && continue
        read -ra words <<<"$line"
        log "uv cache: uvx $line"
        UV_CACHE_DIR=$cache UV_EXCLUDE_NEWER=$exclude_newer UV_PYTHON_DOWNLOADS=never \
            "$venv/bin/uvx" "${words[@]}" --help >/dev/null ||
            die "uvx $line --help failed (UV_CACHE_DIR=$cache)"
    done <"$dir/servers.txt"
    printf '%s\n' "$key" >"$stamp"
}

# The long-tail uvx servers of issue 27 (tests/peers/uv/servers-long-tail.txt: basic-memory
# with a Python 3.12, serena-agent), added to the uv cache install_uv filled (so it runs
# after it, and its stamp includes install_uv's: a refilled cache is refilled here too).
# python312: a Python 3.12 interpreter's real path: python3.12 on PATH when it runs (a
# pyenv shim may not), else the newest 3.12 of pyenv's versions; empty when there is none.
# tests/compat.rs (py312) looks for it the same way.
python312() {
    local exe
    if exe=$(python3.12 -c 'import os, sys; print(os.path.realpath(sys.executable))' 2>/dev/null); then
        printf '%s\n' "$exe"
        return
    fi
    local root
    root=$(pyenv root 2>/dev/null || printf '%s' "$HOME/.pyenv")
    find "$root/versions" -maxdepth 3 -path '*/3.12.*/bin/python3.12' 2>/dev/null | sort -V | tail -1
}

install_uv_long_tail() {
    local dir=$PEERS/uv venv=$PEERS/uv/venv cache=$PEERS/uv/cache stamp key list
    list=$dir/servers-long-tail.txt
    stamp=$dir/.rootfence-stamp-long-tail
    key=$(key_of "$(cat "$dir/.rootfence-stamp") $(python312)" "$list")
    if fresh "$stamp" "$key"; then
        log "uv long-tail servers' cache: up to date"
        return
    fi
    local exclude_newer line words py312
    exclude_newer=$(sed -n 's/^# exclude-newer: //p' "$dir/servers.txt")
    py312=$(python312)
    while read -r line; do
        [[ -z "$line" || "$line" == \#* ]] && continue
        if [[ "$line" == *python3.12* ]]; then
            if [[ -z "$py312" ]]; then
                log "warning: no Python 3.12 (python3.12 on PATH or in pyenv): skipping 'uvx $line' (its cases skip, saying why)"
                continue
            fi
            line=${line/python3.12/$py312}
        fi
        read -ra words <<<"$line"
        log "uv cache: uvx $line"
        UV_CACHE_DIR=$cache UV_EXCLUDE_NEWER=$exclude_newer UV_PYTHON_DOWNLOADS=never \
            "$venv/bin/uvx" "${words[@]}" --help >/dev/null ||
            die "uvx $line --help failed (UV_CACHE_DIR=$cache)"
    done <"$list"
    printf '%s\n' "$key" >"$stamp"
}

install_pipx() {
    local python=${ROOTFENCE_PEERS_PYTHON:-python3}
    local dir=$PEERS/pipx venv=$PEERS/pipx/venv stamp key home
    home=$PWD/$dir/home
    stamp=$dir/.rootfence-stamp
    key=$(key_of "$("$python" --version 2>&1)" "$dir/requirements.txt")
    if fresh "$stamp" "$key" && [[ -x "$home/venvs/mcp-server-time/bin/mcp-server-time" ]]; then
        log "pipx and its server: up to date"
        return
    fi
    log "pipx: creating $venv, pipx install mcp-server-time==2026.10.19"
    rm -rf "$venv" "$home" "$dir/bin" "$dir/man"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --require-hashes --only-binary :all: --no-deps -r "$dir/requirements.txt" >&2
    # pipx resolves the server's dependencies itself (binary wheels only); its venvs hold
    # absolute paths, so they stay here and the suite links them into its temporary home.
    PIPX_HOME=$home PIPX_BIN_DIR=$PWD/$dir/bin PIPX_MAN_DIR=$PWD/$dir/man \
        "$venv/bin/pipx" install --quiet --pip-args="--only-binary :all:" \
        mcp-server-time==2026.10.19 >&2
    [[ -x "$home/venvs/mcp-server-time/bin/mcp-server-time" ]] || die "pipx did not install mcp-server-time in $home"
    printf '%s\n' "$key" >"$stamp"
}

# install_deb PACKAGE BINARY CASES: a Debian package the suite runs (never its service),
# installed with apt-get when BINARY is missing and we are root. A package the apt mirror
# cannot deliver costs only CASES (they skip and say why), never the rest of the suite;
# ROOTFENCE_PEERS_NO_APT=1 skips the install.
apt_updated=0
install_deb() {
    local package=$1 binary=$2 cases=$3
    if [[ -x "$binary" ]]; then
        log "$package: present ($binary)"
        return
    fi
    if [[ "${ROOTFENCE_PEERS_NO_APT:-0}" == 1 ]]; then
        log "$package: not installed (ROOTFENCE_PEERS_NO_APT=1); $cases will skip"
        return
    fi
    if ! command -v apt-get >/dev/null 2>&1 || [[ $(id -u) != 0 ]]; then
        log "warning: $binary is missing: run 'sudo apt-get install $package' for $cases (they skip until then)"
        return
    fi
    log "$package: apt-get install $package"
    if [[ $apt_updated == 0 ]]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 && apt_updated=1
    fi
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$package" >&2; then
        log "warning: apt-get could not install $package; $cases will skip"
        return
    fi
    [[ -x "$binary" ]] || log "warning: apt-get did not install $binary; $cases will skip"
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

# The npm cache `npx -y <spec>` runs from (tests/peers/npx/packages.txt). npx keys its
# install by the spec list, so `npx -p <spec> -- node -e 0` fills the very `_npx` directory
# a later `npx -y <spec>` runs from.
install_npx_cache() {
    need npx "install npm (it comes with Node.js)"
    local dir=$PEERS/npx cache=$PEERS/npx/cache stamp key spec
    stamp=$dir/.rootfence-stamp
    key=$(key_of "node $(node --version) npm $(npm --version)" "$dir/packages.txt")
    if fresh "$stamp" "$key" && [[ -d "$cache/_npx" ]]; then
        log "npx cache: up to date"
        return
    fi
    rm -rf "$cache"
    while read -r spec; do
        [[ -z "$spec" || "$spec" == \#* ]] && continue
        log "npx cache: npx -y $spec"
        # Install scripts off, as in install_node: desktop-commander's reports the install
        # to its authors and puppeteer's downloads a browser from a CDN; neither is needed.
        npm_config_cache=$PWD/$cache npm_config_ignore_scripts=true npm_config_yes=true \
            npm_config_update_notifier=false npm_config_audit=false npm_config_fund=false \
            npx -p "$spec" -- node -e 0 >&2 </dev/null || die "npx -p $spec failed (npm_config_cache=$cache)"
    done <"$dir/packages.txt"
    rm -rf "$cache/_logs"
    printf '%s\n' "$key" >"$stamp"
}

# pnpm (pinned by its lock) and a pnpm home whose dlx cache and store hold the suite's
# `pnpm dlx` server.
install_pnpm() {
    local dir=$PEERS/pnpm home stamp key
    home=$PWD/$dir/home
    stamp=$dir/.rootfence-stamp
    key=$(key_of "node $(node --version)" "$dir/package.json")
    if fresh "$stamp" "$key" && [[ -x "$dir/node_modules/.bin/pnpm" && -d "$home/.cache/pnpm/dlx" ]]; then
        log "pnpm and its dlx cache: up to date"
        return
    fi
    log "pnpm: npm install in $dir, then pnpm dlx @modelcontextprotocol/server-filesystem@2026.8.31"
    rm -rf "$dir/node_modules" "$home"
    # Exact versions: pnpm 12.21.0 names its platform packages (@pnpm/exe.linux-x64, ...)
    # at exactly 12.21.0, so this resolves the same every time without a lock. Installed
    # with scripts off, then pnpm's own install script alone: it puts the native binary in
    # place of the shell placeholders, as `npm install -g pnpm` does. Hosts start commands
    # without a shell, and a placeholder (no `#!` line) then fails with ENOEXEC.
    (cd "$dir" && npm install --no-package-lock --ignore-scripts --no-audit --no-fund --loglevel=error >&2 &&
        npm rebuild pnpm --foreground-scripts --loglevel=error >&2)
    [[ -x "$dir/node_modules/.bin/pnpm" ]] || die "npm did not install pnpm in $dir"
    head -c4 "$dir/node_modules/.bin/pnpm" | grep -q ELF || die "pnpm's install script did not put its native binary in $dir/node_modules/pnpm"
    mkdir -p "$home"
    # stdin closed: the server starts, finds end of input and exits.
    env -u XDG_CACHE_HOME -u XDG_DATA_HOME -u PNPM_HOME HOME="$home" \
        "$dir/node_modules/.bin/pnpm" dlx @modelcontextprotocol/server-filesystem@2026.8.31 \
        "$home" </dev/null >/dev/null || die "pnpm dlx server-filesystem failed (HOME=$home)"
    [[ -d "$home/.cache/pnpm/dlx" ]] || die "pnpm dlx left no cache in $home/.cache/pnpm/dlx"
    printf '%s\n' "$key" >"$stamp"
}

# bun (exact version, like pnpm) and a bun home whose cache holds the suite's `bunx` server.
install_bun() {
    local dir=$PEERS/bun home stamp key
    home=$PWD/$dir/home
    stamp=$dir/.rootfence-stamp
    key=$(key_of "node $(node --version)" "$dir/package.json")
    if fresh "$stamp" "$key" && [[ -x "$dir/node_modules/.bin/bunx" && -d "$home/.bun/install/cache" ]]; then
        log "bun and its bunx cache: up to date"
        return
    fi
    log "bun: npm install in $dir, then bunx @modelcontextprotocol/server-filesystem@2026.8.31"
    rm -rf "$dir/node_modules" "$home"
    (cd "$dir" && npm install --no-package-lock --ignore-scripts --no-audit --no-fund --loglevel=error >&2 &&
        npm rebuild bun --foreground-scripts --loglevel=error >&2)
    head -c4 "$dir/node_modules/.bin/bunx" | grep -q ELF || die "bun's install script did not put its native binary in $dir/node_modules/bun"
    mkdir -p "$home"
    env -u BUN_INSTALL -u XDG_CACHE_HOME HOME="$home" \
        "$dir/node_modules/.bin/bunx" @modelcontextprotocol/server-filesystem@2026.8.31 \
        "$home" </dev/null >/dev/null || die "bunx server-filesystem failed (HOME=$home)"
    [[ -d "$home/.bun/install/cache" ]] || die "bunx left no cache in $home/.bun/install/cache"
    printf '%s\n' "$key" >"$stamp"
}

install_node
install_python
install_rmcp_client
install_uv
install_uv_long_tail
install_pipx
install_npx_cache
install_pnpm
install_bun
# Playwright MCP's browser (Playwright's own builds come from a CDN, not a registry) and the
# renderer of `audit report --html`; the syslog receiver; the load balancer of serve_fleet.
install_deb chromium /usr/bin/chromium "the browser cases (compat's Playwright row, audit_report)"
install_deb rsyslog /usr/sbin/rsyslogd "the rsyslog case of tests/audit_syslog.rs"
install_deb nginx-light /usr/sbin/nginx "the load balancer case of tests/serve_fleet.rs"
install_deploy_validator
log "all test peers installed"
