#!/bin/sh
# Try `rootfence wrap` and `rootfence unwrap` on the example configurations, on copies in a
# temporary directory (your own host configs are not touched).
#
#   examples/configs/try.sh [path/to/rootfence]
#
# Default rootfence: target/debug/rootfence (build it with `cargo build`), else the one
# on PATH. The policy is policies/org-example.toml.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
rf=${1:-$repo/target/debug/rootfence}
[ -x "$rf" ] || rf=$(command -v rootfence)
policy=$repo/policies/org-example.toml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for before in "$here"/*/*.before.json; do
    name=$(basename "$before" .before.json)
    copy=$tmp/$name.json
    cp "$before" "$copy"
    echo "### $(basename "$(dirname "$before")")/$(basename "$before")"
    "$rf" wrap "$copy" --policy "$policy"
    cp "$copy" "$tmp/wrapped"
    "$rf" wrap "$copy" --policy "$policy" >/dev/null 2>&1   # again: nothing changes
    cmp -s "$copy" "$tmp/wrapped" && echo "(wrapping again changed nothing)"
    "$rf" unwrap "$copy" >/dev/null 2>&1
    cmp -s "$before" "$copy" && echo "(unwrap gave back the original bytes)"
    echo
done
