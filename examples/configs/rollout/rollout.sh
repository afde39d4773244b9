#!/bin/sh
# Wrap every developer's MCP host configurations with the organisation's policy.
#
# Ship rootfence and the org policy to every machine first (same MDM / Ansible / Puppet
# run), then run this script, as root or as a user, as often as you like: it is idempotent
# (an entry already wrapped with the same policy is left alone, byte for byte).
#
#   rollout.sh [--dry-run] [--rewrap] [HOME_DIR...]
#
#   --dry-run  print the diffs, change nothing
#   --rewrap   replace the rootfence options of entries wrapped earlier (a new policy path)
#
# Without HOME_DIR: every home under /home and /Users when run as root, else only $HOME.
# Each user's files are edited *as that user*, never as root: a user's config may be a
# symlink, and root must not follow it somewhere else.
#
# What it covers per home: Claude Desktop, Claude Code (~/.claude.json: user scope and
# every project's local scope), VS Code (the user mcp.json) and Cursor (~/.cursor/mcp.json).
# Project files checked into repositories (.mcp.json, .vscode/mcp.json, .cursor/mcp.json)
# belong to their repositories: wrap them there, in a commit, with
#   rootfence wrap --host <host> --project <repo> --policy <policy>
#
# Exit status: 0 all done; 1 some entries need a person (named on stderr); 2 an error.
set -u

ROOTFENCE=${ROOTFENCE:-/usr/local/bin/rootfence}    # where rootfence is installed
POLICY=${ROOTFENCE_POLICY:-/etc/rootfence/org.toml}  # the org policy
HOSTS="claude-desktop claude-code vscode cursor"

extra=""
while [ $# -gt 0 ]; do
    case $1 in
        --dry-run) extra="$extra --dry-run"; shift ;;
        --rewrap) extra="$extra --rewrap"; shift ;;
        --) shift; break ;;
        -*) echo "usage: $0 [--dry-run] [--rewrap] [HOME_DIR...]" >&2; exit 2 ;;
        *) break ;;
    esac
done

if [ $# -eq 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        set -- /home/* /Users/*
    else
        set -- "$HOME"
    fi
fi

# Runs "$@" as the owner of the home directory $home, with HOME set to it and no
# inherited overrides of the config locations.
as_owner() {
    owner=$(stat -c %U "$home" 2>/dev/null || stat -f %Su "$home")
    if [ "$owner" = "$(id -un)" ]; then
        env -u XDG_CONFIG_HOME -u CLAUDE_CONFIG_DIR HOME="$home" "$@"
    elif command -v runuser >/dev/null 2>&1; then
        runuser -u "$owner" -- env -u XDG_CONFIG_HOME -u CLAUDE_CONFIG_DIR HOME="$home" "$@"
    else
        sudo -u "$owner" env -u XDG_CONFIG_HOME -u CLAUDE_CONFIG_DIR HOME="$home" "$@"
    fi
}

status=0
for home in "$@"; do
    [ -d "$home" ] || continue
    for host in $HOSTS; do
        # shellcheck disable=SC2086 # $extra is a list of flags
        as_owner "$ROOTFENCE" wrap --host "$host" --missing-ok \
            --policy "$POLICY" --rootfence-path "$ROOTFENCE" $extra
        rc=$?
        case $rc in
            0) ;;
            1) echo "rollout: $home: $host: some entries need attention (see above)" >&2
               [ "$status" -eq 0 ] && status=1 ;;
            *) echo "rollout: $home: $host: failed (exit $rc)" >&2
               status=2 ;;
        esac
    done
done
exit "$status"
