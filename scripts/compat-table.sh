#!/usr/bin/env bash
# Runs the compatibility suite (tests/compat.rs) on a fresh results file and writes README.md's
# compatibility table from what that run recorded: server x host style -> works wrapped by
# default, with the versions that ran. The table is never written by hand.
#
#   scripts/compat-table.sh           run the suite, then write the table into README.md
#   scripts/compat-table.sh --check   run the suite, then fail if README.md's table differs
#
# The results file is target/compat-results.jsonl (one JSON line per case: server, version,
# host, style, what `rootfence wrap` added, works, what failed); ROOTFENCE_COMPAT_RESULTS
# chooses another. A case that fails is still recorded (works: false, with its first line of
# failure) and shown as "no" in the table; the script then exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=update
case "${1:-}" in
    "") ;;
    --check) mode=check ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "compat-table: unknown option $1 (use --check, or nothing)" >&2; exit 2 ;;
esac

export ROOTFENCE_COMPAT_RESULTS=${ROOTFENCE_COMPAT_RESULTS:-$PWD/target/compat-results.jsonl}
scripts/install-test-peers.sh
rm -f "$ROOTFENCE_COMPAT_RESULTS"

run() { # run FILTER: the suite's tests that match FILTER
    if command -v cargo-nextest >/dev/null 2>&1; then
        cargo nextest run --locked --no-fail-fast --test compat -E "$1"
    else
        local name=${1#*(}; name=${name%)}
        if [[ $1 == not* ]]; then
            cargo test --locked --no-fail-fast --test compat -- --skip "$name"
        else
            cargo test --locked --test compat -- "$name"
        fi
    fi
}

status=0
# The cases record their results; in update mode they skip their own README row check (the
# table is about to be rewritten from these very results).
if [[ $mode == update ]]; then
    ROOTFENCE_COMPAT_UPDATE=1 run 'not test(readme_compat_table)' || status=$?
    ROOTFENCE_COMPAT_UPDATE=1 run 'test(readme_compat_table)'
    git --no-pager diff --stat -- README.md || true
else
    run 'not test(readme_compat_table)' || status=$?
    run 'test(readme_compat_table)'
fi
if [[ $status != 0 ]]; then
    echo "compat-table: some cases failed (rows marked **no** in the table); see above" >&2
fi
exit "$status"
