#!/usr/bin/env bash
# Counts the lines of src/ outside `#[cfg(test)]` modules (issue 25's "non-test lines"):
# inline `#[cfg(test)] mod x { ... }` blocks and files that are `#[cfg(test)] mod x;` are
# left out; everything else counts (blank lines and comments included, as `wc -l` counts;
# the figure without blank and `//` comment lines is given beside it).
# Usage: scripts/count-lines.sh [--files]   (--files: one line per file, largest last)
set -euo pipefail
cd "$(dirname "$0")/.."

# Files that are test modules declared elsewhere (`#[cfg(test)]` then `mod name;`).
test_files=$(
    find src -name '*.rs' | sort | while read -r f; do
        awk -v f="$f" '
            /^[[:space:]]*#\[cfg\(test\)\][[:space:]]*$/ { pending = 1; next }
            pending && match($0, /^[[:space:]]*(pub(\([a-z]+\))? )?mod [A-Za-z_0-9]+;/) {
                name = $0; sub(/^[[:space:]]*(pub(\([a-z]+\))? )?mod /, "", name); sub(/;.*/, "", name)
                dir = f; sub(/\/[^\/]*$/, "", dir)
                base = f; sub(/^.*\//, "", base); sub(/\.rs$/, "", base)
                if (base == "mod" || base == "lib" || base == "main") print dir "/" name ".rs"
                else print dir "/" base "/" name ".rs"
            }
            { pending = 0 }
        ' "$f"
    done
)

find src -name '*.rs' | sort | while read -r f; do
    if grep -qxF "$f" <<<"$test_files"; then
        echo "0 $f 0"
        continue
    fi
    awk -v f="$f" '
        skipping { if ($0 == indent "}") skipping = 0; next }
        /^[[:space:]]*#\[cfg\(test\)\][[:space:]]*$/ { held = $0; next }
        held != "" && match($0, /^[[:space:]]*(pub(\([a-z]+\))? )?mod [A-Za-z_0-9]+ \{/) {
            indent = $0; sub(/[^[:space:]].*$/, "", indent)
            skipping = 1; held = ""; next
        }
        held != "" { n++; code++; held = "" }
        { n++ }
        !/^[[:space:]]*$/ && !/^[[:space:]]*\/\// { code++ }
        END { print n + 0, f, code + 0 }
    ' "$f"
done | if [[ "${1:-}" == "--files" ]]; then
    sort -n | cut -d' ' -f1,2
else
    awk '{ total += $1; code += $3 }
        END { print total " non-test lines in src/ (" code " without blank and comment lines)" }'
fi
