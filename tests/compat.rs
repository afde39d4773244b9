//! The compatibility suite (issue 12): real MCP servers, each wrapped exactly as
//! `rootfence wrap` writes its host entry, started the way that host starts it, with the
//! default sandbox and the default policy, and driven by the official Python SDK client.
//!
//! For every case the test writes the host's config file (Claude Desktop's
//! `claude_desktop_config.json`, or VS Code's `.vscode/mcp.json` with `${workspaceFolder}`),
//! runs the real `rootfence wrap` on it, reads back the entry it wrote, and starts it as the
//! host would: `command` and `args` as written (VS Code's `${workspaceFolder}` expanded), the
//! entry's `env` on top of the host's environment, the host's working directory (`/` for
//! Claude Desktop, the workspace folder for VS Code), no shell, the host sending roots (VS
//! Code) or not (Claude Desktop). The same session runs against the original entry (no
//! rootfence) and against the wrapped one, on the same tree (restored in between), and:
//!
//! - the transcripts of the allowed work are identical (only clock times, dates, UUIDs and,
//!   for git, commit hashes are masked: they differ from one run to the next);
//! - the wrapped run also asks for what must be refused (a file outside the roots, a `.env`
//!   inside one), and each refusal is the expected kind: a tool error (`isError`, rootfence's
//!   text and `io.rootfence/denial`), a JSON-RPC error (`rootfence: denied: ...`), or the
//!   server's own tool error where the sandbox stopped the server's own system call;
//! - the secret marker (in the `.env` and in the file outside) never reaches the client.
//!
//! A case may name a known difference (`Case::known`): it still runs every check, and it
//! passes only while the wrapped transcript differs in exactly that way and no other (and
//! fails once the difference is gone, so the row is updated). A product problem makes the row
//! say **no** with the reason; a deliberate difference (a protection whose trace the server
//! can see) makes it say **yes** and name the difference. Today there is one, deliberate: the
//! sandbox's `.claude/`/`.cursor/`/`.vscode/` placeholders show up in server-filesystem's
//! listing of a root.
//!
//! Each case appends its outcome (server, version, host style, works wrapped by default,
//! what failed) as one JSON line to the results file (`target/compat-results.jsonl`, or
//! `$ROOTFENCE_COMPAT_RESULTS`), and checks that README.md's compatibility table says the
//! same for its row. `scripts/compat-table.sh` runs the suite on a fresh results file and
//! writes the table into README.md from it (`readme_compat_table_is_the_suite_results`, with
//! `ROOTFENCE_COMPAT_UPDATE=1`).
//!
//! Hermetic: every tree, the home directory (`HOME`, with its `.gitconfig`, npm cache and
//! audit log) and the config files are temporary; no server needs the network (which is why
//! mcp-server-fetch is not here). The pinned servers come from `scripts/install-test-peers.sh`.

mod common;
#[path = "common/interop_peers.rs"]
mod interop_peers;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use interop_peers::{node_entry, peers_dir, python, require_peers};
use serde_json::{Value, json};

/// In the `.env` inside a root and in the file outside every root.
const SECRET: &str = "compat-secret-9c41e7";

/// The token the Python SDK server's host entry sets (`tests/peers/py/roots_files_server.py`
/// compares it with its own copy and never echoes it).
const FILES_TOKEN: &str = "compat-token-5d1e";

/// One client run's limit (the client also bounds itself with `--timeout`, which a case's
/// session options may raise: the long-tail uvx servers build their environment and index
/// before answering `initialize`, which takes a minute on a loaded CI machine).
const RUN_LIMIT: Duration = Duration::from_secs(300);

// -------------------------------------------------------------------------------------------
// The cases: one row of README.md's table each
// -------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Host {
    /// `claude_desktop_config.json`: `mcpServers`, started in `/`, no roots from the host.
    ClaudeDesktop,
    /// `.vscode/mcp.json`: `servers` with `"type": "stdio"`, started in the workspace folder,
    /// `${workspaceFolder}` expanded, the workspace folder sent as the host's root.
    VsCode,
    /// Cursor's user-wide `~/.cursor/mcp.json`: `mcpServers`, the entry's `env` on top of
    /// the app's environment, started in the app's own working directory (`/`), and the
    /// project open in the editor sent as the host's root (`<project>`), whatever the entry
    /// is for.
    Cursor,
}

impl Host {
    fn label(self) -> &'static str {
        match self {
            Host::ClaudeDesktop => "Claude Desktop",
            Host::VsCode => "VS Code",
            Host::Cursor => "Cursor",
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Package {
    /// An npm package installed under `tests/peers/node/node_modules/<dir>`.
    Npm {
        name: &'static str,
        dir: &'static str,
    },
    /// A PyPI distribution installed in `tests/peers/.venv`.
    PyPi(&'static str),
    /// A server script of this repository on a PyPI distribution (the SDK).
    Script {
        path: &'static str,
        on: &'static str,
    },
    /// A PyPI distribution started with `uvx <dist>@<version>` from the uv cache that
    /// `scripts/install-test-peers.sh` fills (`tests/peers/uv/servers.txt`).
    Uvx {
        dist: &'static str,
        version: &'static str,
    },
    /// A PyPI distribution installed with `pipx install <dist>==<version>` by
    /// `scripts/install-test-peers.sh` (`tests/peers/pipx/home`).
    Pipx {
        dist: &'static str,
        version: &'static str,
    },
    /// An npm package the host starts with `npx -y <name>@<version>` (or `pnpm dlx`), from
    /// the npm cache `scripts/install-test-peers.sh` fills (`tests/peers/npx/packages.txt`,
    /// the pnpm home of `tests/peers/pnpm`).
    NpmExec {
        name: &'static str,
        version: &'static str,
    },
}

struct Case {
    /// The test's own key (the results file's `case`).
    id: &'static str,
    server: &'static str,
    package: Package,
    host: Host,
    /// How the host entry gives the server its places (the table's host style column).
    style: &'static str,
    /// The options `rootfence wrap` derives from the entry (between `run` and `--`), with
    /// the temporary home shown as `~` and the project as `<project>`.
    wrap_adds: &'static str,
    /// What the suite shows for this case (the table's last column).
    checked: &'static str,
    /// A difference this case is known to show (a product problem: its row says **no** with
    /// the reason; a deliberate one: **yes**, naming it). The case still runs every check; it
    /// passes only if the wrapped transcript differs from the direct one in exactly the way
    /// `known` describes and in no other, and it fails once the difference is gone, so that
    /// the row is updated.
    known: Option<Known>,
    /// The host runs as a normal user (uid/gid 65534 when the suite runs as root), as users
    /// run their hosts: a server run by root holds `CAP_SYS_PTRACE`, and the browser
    /// family's `/proc` grant is then withheld by design (docs/sandbox.md).
    normal_user: bool,
}

/// A known difference between the direct and the wrapped transcript.
#[derive(Clone, Copy)]
struct Known {
    /// The table's reason (after "**no**: " or "yes, one deliberate difference: ").
    reason: &'static str,
    /// True for a difference rootfence makes on purpose, whose cost is documented (the
    /// server still does all its work): the row says **yes** and names it.
    deliberate: bool,
    /// True when every difference is this problem.
    explains: fn(&[Difference]) -> bool,
}

/// A JSON path where two transcripts differ, with the direct and the wrapped value.
type Difference = (String, Value, Value);

const FILESYSTEM: Package = Package::Npm {
    name: "@modelcontextprotocol/server-filesystem",
    dir: "@modelcontextprotocol/server-filesystem",
};
const MEMORY: Package = Package::Npm {
    name: "@modelcontextprotocol/server-memory",
    dir: "@modelcontextprotocol/server-memory",
};
const EVERYTHING: Package = Package::Npm {
    name: "@modelcontextprotocol/server-everything",
    dir: "everything-latest",
};
const PLAYWRIGHT: Package = Package::Npm {
    name: "@playwright/mcp",
    dir: "@playwright/mcp",
};
const ROOTS_FILES_SERVER: &str = "tests/peers/py/roots_files_server.py";

/// In the order of README.md's table.
const CASES: &[Case] = &[
    Case {
        id: "filesystem_claude_desktop",
        server: "server-filesystem",
        package: FILESYSTEM,
        host: Host::ClaudeDesktop,
        style: "directory argument, no host roots",
        wrap_adds: "--root <project>",
        checked: "read, write, edit, list, tree; outside path and `.env` refused (tool error)",
        known: Some(PLACEHOLDERS),
        normal_user: false,
    },
    Case {
        id: "filesystem_vscode",
        server: "server-filesystem",
        package: FILESYSTEM,
        host: Host::VsCode,
        style: "`${workspaceFolder}` argument, host roots",
        wrap_adds: "--root ${workspaceFolder}",
        checked: "the same, and relative paths from the workspace folder; outside path and `.env` refused (tool error)",
        known: Some(PLACEHOLDERS),
        normal_user: false,
    },
    Case {
        id: "memory_claude_desktop",
        server: "server-memory",
        package: MEMORY,
        host: Host::ClaudeDesktop,
        style: "`MEMORY_FILE_PATH` in `env`, no host roots",
        wrap_adds: "--env MEMORY_FILE_PATH --write ~/.mcp-memory",
        checked: "reads and extends the graph in the file `MEMORY_FILE_PATH` names; outside `file:` URI refused (JSON-RPC error)",
        known: None,
        normal_user: false,
    },
    Case {
        id: "git_claude_desktop",
        server: "mcp-server-git",
        package: Package::PyPi("mcp-server-git"),
        host: Host::ClaudeDesktop,
        style: "`--repository` argument, `~/.gitconfig`, no host roots",
        wrap_adds: "--root <project>/repo",
        checked: "status, diffs, add, commit authored from `~/.gitconfig`, log, show; `git add .env` fails in the sandbox, outside repository refused (tool errors)",
        known: None,
        normal_user: false,
    },
    Case {
        id: "time_claude_desktop",
        server: "mcp-server-time",
        package: Package::PyPi("mcp-server-time"),
        host: Host::ClaudeDesktop,
        style: "no arguments, no host roots",
        wrap_adds: "",
        checked: "current time, conversion; outside `file:` URI refused (JSON-RPC error)",
        known: None,
        normal_user: false,
    },
    Case {
        id: "everything_claude_desktop",
        server: "server-everything",
        package: EVERYTHING,
        host: Host::ClaudeDesktop,
        style: "`stdio` argument, no host roots",
        wrap_adds: "",
        checked: "resources, templates, tools, prompts; outside `file:` URI refused (JSON-RPC error)",
        known: None,
        normal_user: false,
    },
    Case {
        id: "python_sdk_roots_files_vscode",
        server: "Python `mcp` SDK server",
        package: Package::Script {
            path: ROOTS_FILES_SERVER,
            on: "mcp",
        },
        host: Host::VsCode,
        style: "token in `env`, files from the host's roots",
        wrap_adds: "--env FILES_SERVER_TOKEN",
        checked: "starts only with its `env` token; lists and reads `file:` resources of the roots; `.env` and outside `file:` URIs refused (JSON-RPC error)",
        known: None,
        normal_user: false,
    },
    Case {
        id: "playwright_claude_desktop",
        server: "Playwright MCP",
        package: PLAYWRIGHT,
        host: Host::ClaudeDesktop,
        style: "headless, Debian's Chromium by `--executable-path`, no host roots, host run by a normal user",
        wrap_adds: "--read /usr/bin/chromium",
        checked: "Chromium starts with its own sandbox; navigates, snapshots, evaluates, clicks (the snapshot file's directory under `$TMPDIR` masked); `file:` navigation outside refused (tool error)",
        known: None,
        normal_user: true,
    },
    Case {
        id: "git_uvx_claude_desktop",
        server: "mcp-server-git",
        package: UVX_GIT,
        host: Host::ClaudeDesktop,
        style: "`uvx mcp-server-git@…` with uv in `~/.local/bin` (uv's installer), `--repository` argument, no host roots",
        wrap_adds: "--root <project>/repo",
        checked: "uvx runs its sibling uv, which builds the environment from the uv cache offline with the pyenv python on `PATH`; status, diffs, add, commit, log; `git add .env` fails in the sandbox, outside repository refused (tool errors)",
        known: None,
        normal_user: false,
    },
    Case {
        id: "sqlite_uvx_claude_desktop",
        server: "mcp-server-sqlite",
        package: UVX_SQLITE,
        host: Host::ClaudeDesktop,
        style: "`uvx --with mcp<2 mcp-server-sqlite@…` with uv in `~/.local/bin`, `--db-path` argument, no host roots",
        wrap_adds: "--write <project>/data",
        checked: "creates a table, inserts, queries, describes, records an insight in the database file; outside `file:` URI refused (JSON-RPC error)",
        known: None,
        normal_user: false,
    },
    Case {
        id: "sqlite_uvx_pyenv_python_claude_desktop",
        server: "mcp-server-sqlite",
        package: UVX_SQLITE,
        host: Host::ClaudeDesktop,
        style: "`uvx --python <pyenv prefix>/bin/python3.11 --with mcp<2 mcp-server-sqlite@…`, uv in `~/.local/bin`, no host roots",
        wrap_adds: "--write <project>/data",
        checked: "the named pyenv interpreter's install (its `lib/`) is granted read-exec, never its `bin/` read-write; the same work as above",
        known: None,
        normal_user: false,
    },
    Case {
        id: "memory_node_modules_bin_claude_desktop",
        server: "server-memory",
        package: MEMORY,
        host: Host::ClaudeDesktop,
        style: "the project's own `node_modules/.bin/mcp-server-memory`, `MEMORY_FILE_PATH` in `env`, no host roots",
        wrap_adds: "--env MEMORY_FILE_PATH --write ~/.mcp-memory",
        checked: "the whole `node_modules` (the SDK it imports) is granted read-exec; reads and extends the graph; outside `file:` URI refused (JSON-RPC error)",
        known: None,
        normal_user: false,
    },
    Case {
        id: "markitdown_uvx_claude_desktop",
        server: "markitdown-mcp",
        package: Package::Uvx {
            dist: "markitdown-mcp",
            version: "0.0.1a8",
        },
        host: Host::ClaudeDesktop,
        style: "`uvx markitdown-mcp@…` with uv in `~/.local/bin`, no arguments, no host roots",
        wrap_adds: "",
        checked: "uvx builds its 71-package environment (pandas, onnxruntime, magika) from the uv cache offline; converts an HTML `data:` URI to Markdown; a `file:` URI outside refused (tool error)",
        known: None,
        normal_user: false,
    },
    Case {
        id: "time_pipx_claude_desktop",
        server: "mcp-server-time",
        package: Package::Pipx {
            dist: "mcp-server-time",
            version: "2026.10.19",
        },
        host: Host::ClaudeDesktop,
        style: "installed with `pipx install`: `mcp-server-time` on `PATH` from `~/.local/bin`, a link into its pipx venv, no host roots",
        wrap_adds: "",
        checked: "the link is followed to the pipx venv and, by its `pyvenv.cfg`, to the pyenv base interpreter (both read-exec); current time, conversion; outside `file:` URI refused (JSON-RPC error)",
        known: None,
        normal_user: false,
    },
    Case {
        id: "git_worktree_claude_desktop",
        server: "mcp-server-git",
        package: Package::PyPi("mcp-server-git"),
        host: Host::ClaudeDesktop,
        style: "`--repository` a linked worktree (`git worktree add`: its git directory outside the root), no host roots",
        wrap_adds: "--root <project>/wt",
        checked: "status, diffs, add, commit (GitPython's `COMMIT_EDITMSG` in the shared `.git`), branch, log in the worktree (its git directory, the shared `.git`'s files, `objects/`, `refs/`, `logs/` granted; the main `.git`'s `hooks/` and `config` unwritable); `git add .env` fails in the sandbox, outside repository refused (tool errors)",
        known: None,
        normal_user: false,
    },
    Case {
        id: "filesystem_remote_word_claude_desktop",
        server: "server-filesystem",
        package: FILESYSTEM,
        host: Host::ClaudeDesktop,
        style: "directory argument `~/jsmith1987/app`, whose `.git/config` names `git@github.com:jsmith1987/app.git` and the user `jsmith1987`, no host roots",
        wrap_adds: "--root ~/jsmith1987/app",
        checked: "read, write, list, info, search: every answer naming the project path arrives whole (the tripwire fingerprints credentials, not names); `.env` and outside path refused (tool error)",
        known: Some(PLACEHOLDERS),
        normal_user: false,
    },
    // Issue 27's Python long tail (LEARNED_CASES: wrapped with `--learn --yes`).
    Case {
        id: "basic_memory_uvx_pyenv_python_claude_desktop",
        server: "basic-memory",
        package: Package::Uvx {
            dist: "basic-memory",
            version: "0.24.1",
        },
        host: Host::ClaudeDesktop,
        style: "`uvx --python <pyenv prefix>/bin/python3.12 basic-memory@… mcp`, uv in `~/.local/bin`, no host roots; wrapped with `rootfence wrap --learn --yes`",
        wrap_adds: "--write ~/.basic-memory --write ~/basic-memory",
        checked: "its state in the home (`~/.basic-memory`: config, database, log; `~/basic-memory`: the notes) granted as two new directories from rootfence's catalogue (matched by the PyPI distribution uvx runs), never the home; the named python's install read-exec; writes a note, reads it, searches it; a file outside refused (tool error) and an outside `file:` URI (JSON-RPC error)",
        known: None,
        normal_user: false,
    },
    Case {
        id: "serena_uvx_claude_desktop",
        server: "serena",
        package: Package::Uvx {
            dist: "serena-agent",
            version: "2.1.0",
        },
        host: Host::ClaudeDesktop,
        style: "`uvx --from serena-agent@… serena start-mcp-server --project <project> --agent-interface tools`, uv in `~/.local/bin`, no host roots; wrapped with `rootfence wrap --learn --yes`",
        wrap_adds: "--root <project> --write ~/.serena --write /dev/shm",
        checked: "its state in the home (`~/.serena`: config, logs, global memories) granted as a new directory from rootfence's catalogue, never the home; the trial learns `/dev/shm` (its semaphores); writes, lists and reads a project memory (`<project>/.serena/memories`); a file outside refused (tool error)",
        known: None,
        normal_user: false,
    },
];

const UVX_GIT: Package = Package::Uvx {
    dist: "mcp-server-git",
    version: "2026.10.19",
};
const UVX_SQLITE: Package = Package::Uvx {
    dist: "mcp-server-sqlite",
    version: "2025.4.25",
};

/// rootfence's sandbox creates an empty read-only `.claude/`, `.cursor/` and `.vscode/` at the
/// top of each writable root that lacks them, for the session (src/sandbox/placeholder.rs), so
/// that the server cannot plant a host's or an editor's settings there (hooks, tasks: code
/// that runs outside the sandbox at the next session). No other kernel mechanism stops the
/// creation of one name in a writable directory; the server's listing of a root then shows
/// three empty directories the user does not have (docs/sandbox.md, "Placeholders").
const PLACEHOLDERS: Known = Known {
    reason: "a listing of the root also shows empty read-only `.claude/`, `.cursor/`, `.vscode/`, \
             the placeholders that keep the server from planting a host's settings there for the session \
             (docs/sandbox.md); everything else matches",
    deliberate: true,
    explains: only_placeholder_lines,
};

/// Every difference is a listing whose wrapped text has `[DIR] .claude`, `[DIR] .cursor` or
/// `[DIR] .vscode` lines more than the direct text, and nothing else.
fn only_placeholder_lines(diffs: &[Difference]) -> bool {
    const EXTRA: [&str; 3] = ["[DIR] .claude", "[DIR] .cursor", "[DIR] .vscode"];
    !diffs.is_empty()
        && diffs.iter().all(|(_, direct, wrapped)| {
            let (Some(d), Some(w)) = (direct.as_str(), wrapped.as_str()) else {
                return false;
            };
            let direct: Vec<&str> = d.lines().collect();
            let kept: Vec<&str> = w
                .lines()
                .filter(|l| !EXTRA.contains(l) || direct.contains(l))
                .collect();
            kept.len() < w.lines().count() && kept == direct
        })
}

/// Every case, in the order of README.md's table: [`CASES`], then each later section's.
fn all_cases() -> impl Iterator<Item = &'static Case> {
    CASES.iter().chain(NODE_CASES)
}

fn case(id: &str) -> &'static Case {
    all_cases()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id}"))
}

// -------------------------------------------------------------------------------------------
// Versions, from what is installed (so the table names what actually ran)
// -------------------------------------------------------------------------------------------

fn site_packages() -> PathBuf {
    let lib = peers_dir().join(".venv/lib");
    std::fs::read_dir(&lib)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/install-test-peers.sh)", lib.display()))
        .filter_map(Result::ok)
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .unwrap_or_else(|| panic!("no site-packages under {}", lib.display()))
}

fn pypi_version(dist: &str) -> String {
    let prefix = format!("{}-", dist.replace('-', "_"));
    std::fs::read_dir(site_packages())
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .find_map(|n| {
            n.strip_prefix(&prefix)
                .and_then(|rest| rest.strip_suffix(".dist-info"))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| {
            panic!(
                "{dist} is not installed in tests/peers/.venv (run scripts/install-test-peers.sh)"
            )
        })
}

fn npm_version(dir: &str) -> String {
    let manifest = peers_dir()
        .join("node/node_modules")
        .join(dir)
        .join("package.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run scripts/install-test-peers.sh)",
            manifest.display()
        )
    }))
    .unwrap();
    v["version"].as_str().unwrap().to_owned()
}

/// `name version`, as the table shows it.
fn version_of(p: Package) -> String {
    match p {
        Package::Npm { name, dir } => format!("`{name}` {}", npm_version(dir)),
        Package::PyPi(dist) => format!("`{dist}` {}", pypi_version(dist)),
        Package::Script { path, on } => format!("`{path}` on `{on}` {}", pypi_version(on)),
        Package::Uvx { dist, version } | Package::Pipx { dist, version } => {
            format!("`{dist}` {version}")
        }
        Package::NpmExec { name, version } => format!("`{name}` {version}"),
    }
}

// -------------------------------------------------------------------------------------------
// The user's machine: a temporary home and tree
// -------------------------------------------------------------------------------------------

struct World {
    /// The whole temporary world (removed when dropped).
    tmp: tempfile::TempDir,
    home: PathBuf,
    /// The user's project (VS Code's workspace folder; Claude Desktop's directory argument).
    project: PathBuf,
    /// A directory outside every root, holding the secret.
    outside: PathBuf,
    /// Variables the case adds to the host's environment (`PATH` with `~/.local/bin`,
    /// uv's offline switches).
    env: std::cell::RefCell<BTreeMap<String, String>>,
    /// Options the case gives `rootfence wrap` besides the config file (what the user adds
    /// when wrap's output tells them to, e.g. `--run-arg=--root=DIR`).
    wrap_args: std::cell::RefCell<Vec<String>>,
}

fn world() -> World {
    // Named like a user's home would be: no hidden component and all lowercase
    // (mcp-obsidian 1.0.0 refuses any path with a component starting with `.`, and lowercases
    // its vault's path before reading it).
    static WORLDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = WORLDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = tempfile::Builder::new()
        .prefix(&format!("rootfence-compat-{}-{n}", std::process::id()))
        .rand_bytes(0)
        .tempdir()
        .expect("a temporary directory");
    // Canonical: servers realpath their directories, and the transcripts name them.
    let base = tmp.path().canonicalize().unwrap();
    let (home, project, outside) = (
        base.join("home"),
        base.join("project"),
        base.join("outside"),
    );
    for d in [&home, &project, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(outside.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    World {
        tmp,
        home,
        project,
        outside,
        env: Default::default(),
        wrap_args: Default::default(),
    }
}

/// The normal user a `normal_user` case's host runs as when the suite runs as root.
const NOBODY: u32 = 65534;

fn chown_tree(p: &Path, id: u32) {
    std::os::unix::fs::lchown(p, Some(id), Some(id))
        .unwrap_or_else(|e| panic!("chown {}: {e}", p.display()));
    if p.is_dir() && !p.is_symlink() {
        for e in std::fs::read_dir(p).unwrap() {
            chown_tree(&e.unwrap().path(), id);
        }
    }
}

fn uri(p: &Path) -> String {
    format!("file://{}", p.display())
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// The host's own environment: the test's, with a temporary `HOME` and none of the user's
/// XDG directories (so caches, the audit log and configuration all live in the temp home).
fn host_env(w: &World) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| !k.starts_with("XDG_") && k != "RUST_LOG")
        .collect();
    env.insert("HOME".into(), s(&w.home));
    env.extend(w.env.borrow().clone());
    env
}

/// Where the host keeps its config, and the key of its server map.
fn config_file(w: &World, host: Host) -> (PathBuf, &'static str) {
    match host {
        Host::ClaudeDesktop => (
            w.home.join(".config/Claude/claude_desktop_config.json"),
            "mcpServers",
        ),
        Host::VsCode => (w.project.join(".vscode/mcp.json"), "servers"),
        Host::Cursor => (w.home.join(".cursor/mcp.json"), "mcpServers"),
    }
}

/// Writes the host config holding `entry` as server `name`, runs the real `rootfence wrap`
/// on it (the built-in default policy: no `--policy`; `extra` options after it), and
/// returns the entry it wrote.
fn wrap(w: &World, host: Host, name: &str, entry: &Value, extra: &[&str]) -> Value {
    let (file, key) = config_file(w, host);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let mut entry = entry.clone();
    if host == Host::VsCode {
        entry
            .as_object_mut()
            .unwrap()
            .insert("type".into(), json!("stdio"));
    }
    let text = serde_json::to_string_pretty(&json!({ key: { name: entry } })).unwrap();
    std::fs::write(&file, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rootfence"))
        .arg("wrap")
        .arg(&file)
        .args(["--rootfence-path", env!("CARGO_BIN_EXE_rootfence")])
        .args(extra)
        .args(w.wrap_args.borrow().iter())
        .env_clear()
        .envs(host_env(w))
        .stdin(Stdio::null())
        .output()
        .expect("rootfence wrap runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "rootfence wrap failed:\n{err}");
    let wrapped: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap())
        .expect("the wrapped config is JSON");
    let wrapped = wrapped[key][name].clone();
    assert_eq!(
        wrapped["command"],
        env!("CARGO_BIN_EXE_rootfence"),
        "wrap did not wrap the entry:\n{err}\n{wrapped}"
    );
    wrapped
}

/// The options wrap put between `run` and `--`, shown without the run's temporary paths.
fn derived_options(w: &World, wrapped: &Value) -> String {
    let args: Vec<&str> = wrapped["args"]
        .as_array()
        .expect("wrapped args")
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let end = args
        .iter()
        .position(|a| *a == "--")
        .expect("`--` in the wrapped args");
    assert_eq!(args[0], "run", "{wrapped}");
    args[1..end]
        .join(" ")
        .replace(&s(&w.project), "<project>")
        .replace(&s(&w.home), "~")
}

// -------------------------------------------------------------------------------------------
// Starting an entry as the host does, with the SDK client
// -------------------------------------------------------------------------------------------

struct Run {
    transcript: Value,
    stdout: String,
    stderr: String,
}

/// Runs `session.py <args> -- <the entry's command line>` as `host` starts the entry.
fn run_entry(w: &World, host: Host, entry: &Value, args: &[String], normal_user: bool) -> Run {
    let ws = s(&w.project);
    let expand = |v: &str| match host {
        Host::VsCode => v.replace("${workspaceFolder}", &ws),
        Host::ClaudeDesktop | Host::Cursor => v.to_owned(),
    };
    let mut argv = vec![expand(entry["command"].as_str().expect("a command"))];
    argv.extend(
        entry["args"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|v| expand(v.as_str().unwrap()))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default(),
    );
    let mut env = host_env(w);
    for (k, v) in entry["env"].as_object().into_iter().flatten() {
        env.insert(k.clone(), expand(v.as_str().unwrap()));
    }
    let cwd = match host {
        Host::ClaudeDesktop | Host::Cursor => PathBuf::from("/"),
        Host::VsCode => w.project.clone(),
    };
    if normal_user && nix::unistd::geteuid().is_root() {
        // The user's own files are the user's: the whole temporary world, home included.
        chown_tree(w.tmp.path(), NOBODY);
        // What the host starts runs as the user. The client itself stays root: its Python
        // lives under root's home, which the user cannot enter.
        let id = NOBODY.to_string();
        let mut prefixed = vec![
            "/usr/bin/setpriv".to_owned(),
            format!("--reuid={id}"),
            format!("--regid={id}"),
            "--clear-groups".to_owned(),
            "--".to_owned(),
        ];
        prefixed.append(&mut argv);
        argv = prefixed;
    }
    let mut cmd = Command::new(python());
    cmd.arg(peers_dir().join("py/session.py"));
    if matches!(host, Host::VsCode | Host::Cursor) {
        cmd.args(["--roots", &uri(&w.project)]);
    }
    cmd.args(["--timeout", "60"])
        .args(args)
        .arg("--")
        .args(&argv)
        .env_clear()
        .envs(&env)
        .current_dir(&cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("the Python SDK client starts");
    let mut out_pipe = child.stdout.take().unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out_pipe, &mut v).ok();
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err_pipe, &mut v).ok();
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the session did not end within {RUN_LIMIT:?}: {argv:?}\n{}",
                String::from_utf8_lossy(&err.join().unwrap_or_default())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = String::from_utf8_lossy(&out.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned();
    assert!(
        status.success(),
        "the session failed ({status}): {argv:?}\nstderr:\n{stderr}"
    );
    let transcript = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("the transcript is not JSON ({e}):\n{stdout}\n{stderr}"));
    Run {
        transcript,
        stdout,
        stderr,
    }
}

// -------------------------------------------------------------------------------------------
// What a case runs and expects
// -------------------------------------------------------------------------------------------

/// Who refuses a request of the wrapped run, and how the client sees it.
#[derive(Clone, Debug)]
enum Refusal {
    /// rootfence, as a tool execution error (SEP-1303) with this denial reason.
    RootfenceTool(&'static str),
    /// rootfence, as a JSON-RPC error with this denial reason.
    RootfenceRpc(&'static str),
    /// The server's own tool error: the sandbox (or the server's own check) stopped it.
    ServerTool,
}

/// A request the wrapped run makes that must be refused.
struct Denial {
    /// `--call-error NAME=JSON` or `--read-error URI`.
    arg: (&'static str, String),
    by: Refusal,
}

fn call_error(tool: &str, args: Value, by: Refusal) -> Denial {
    Denial {
        arg: ("--call-error", format!("{tool}={args}")),
        by,
    }
}

fn read_error(u: String, by: Refusal) -> Denial {
    Denial {
        arg: ("--read-error", u),
        by,
    }
}

type Check<'a> = Box<dyn Fn(&Run) + 'a>;

struct Spec<'a> {
    /// The entry as the user writes it (before wrap).
    entry: Value,
    /// session.py options for the allowed work, the same in both runs.
    session: Vec<String>,
    /// What the wrapped run also asks for, and must be refused.
    denials: Vec<Denial>,
    /// Puts the tree back as it was before the first run.
    reset: Box<dyn Fn() + 'a>,
    /// Checks after each run (on the transcript and on disk).
    after: Check<'a>,
    /// Checks after the wrapped run only.
    after_wrapped: Check<'a>,
}

fn opts(pairs: &[(&str, String)]) -> Vec<String> {
    pairs
        .iter()
        .flat_map(|(k, v)| [k.to_string(), v.clone()])
        .collect()
}

fn call(tool: &str, args: Value) -> (&'static str, String) {
    ("--call", format!("{tool}={args}"))
}

/// Every place two JSON values differ (`first_difference` reports only the first).
fn differences(a: &Value, b: &Value, path: String, out: &mut Vec<Difference>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let sub = format!("{path}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(va), Some(vb)) => differences(va, vb, sub, out),
                    (va, vb) => out.push((
                        sub,
                        va.cloned().unwrap_or(Value::Null),
                        vb.cloned().unwrap_or(Value::Null),
                    )),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                differences(va, vb, format!("{path}[{i}]"), out);
            }
        }
        _ if a != b => out.push((path, a.clone(), b.clone())),
        _ => {}
    }
}

/// The transcript's steps that are not refusals.
fn allowed_steps(t: &Value) -> Value {
    let mut t = t.clone();
    if let Some(steps) = t["steps"].as_array_mut() {
        steps.retain(|s| s["step"] != "call-error" && s["step"] != "read-error");
    }
    t
}

fn check_refusal(step: &Value, by: &Refusal) {
    let error = &step["error"];
    match by {
        Refusal::RootfenceTool(reason) => {
            assert_eq!(error["isError"], true, "not a tool error: {step}");
            assert_eq!(error["denial"]["reason"], *reason, "{step}");
            let text = error["text"].as_str().unwrap_or_default();
            assert!(
                text.starts_with("rootfence refused this call"),
                "not rootfence's text: {step}"
            );
            assert!(text.contains("allowed roots"), "no hint: {step}");
        }
        Refusal::RootfenceRpc(reason) => {
            assert!(error["code"].is_i64(), "not a JSON-RPC error: {step}");
            let message = error["message"].as_str().unwrap_or_default();
            assert!(
                message.starts_with("rootfence: denied: ")
                    && message.ends_with(&format!("({reason})")),
                "not rootfence's {reason} denial: {step}"
            );
        }
        Refusal::ServerTool => {
            assert_eq!(error["isError"], true, "not a tool error: {step}");
            assert!(error["denial"].is_null(), "{step}");
        }
    }
}

/// Runs a case: the entry directly, the tree restored, the wrapped entry with the denials;
/// compares, checks, and records the outcome.
fn run_case(id: &str, build: impl FnOnce(&World) -> Spec<'_>) {
    let case = case(id);
    if rootfence::sandbox::landlock_abi().is_none() {
        eprintln!("SKIPPED {id}: Landlock is not available on this kernel");
        return;
    }
    require_peers();
    let version = version_of(case.package);
    let started = Instant::now();
    // Ok(true): the case showed its known problem and passed every other check.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> bool {
        let w = world();
        let spec = build(&w);
        let wrapped = wrap(&w, case.host, "server", &spec.entry, learn_args(case.id));
        assert_eq!(
            derived_options(&w, &wrapped),
            case.wrap_adds,
            "rootfence wrap derived other options from the entry: {wrapped}"
        );

        let direct = run_entry(&w, case.host, &spec.entry, &spec.session, case.normal_user);
        assert!(
            !direct.stdout.contains(SECRET),
            "the direct session's allowed work reached the secret (a test bug)"
        );
        (spec.after)(&direct);
        (spec.reset)();

        let mut args = spec.session.clone();
        for d in &spec.denials {
            args.extend([d.arg.0.to_owned(), d.arg.1.clone()]);
        }
        let through = run_entry(&w, case.host, &wrapped, &args, case.normal_user);
        // rootfence was in the path, with the sandbox on (its start-up report).
        assert!(
            through
                .stderr
                .contains("rootfence: sandbox (best-effort): landlock ABI"),
            "no sandbox report from rootfence:\n{}",
            through.stderr
        );
        assert!(
            !through.stdout.contains(SECRET),
            "the secret reached the client through rootfence:\n{}",
            through.stdout
        );
        let (d, t) = (
            allowed_steps(&direct.transcript),
            allowed_steps(&through.transcript),
        );
        let mut diffs = Vec::new();
        differences(&d, &t, "$".into(), &mut diffs);
        let known = case.known.is_some_and(|k| (k.explains)(&diffs));
        // The refusals and the checks on disk run whatever the transcripts show.
        let transcript_failure = (!diffs.is_empty() && !known).then(|| {
            let shown: Vec<String> = diffs
                .iter()
                .take(5)
                .map(|(path, a, b)| format!("at {path}\n  direct:  {a}\n  wrapped: {b}"))
                .collect();
            format!(
                "the wrapped transcript differs from the direct one {}\nrootfence's stderr:\n{}",
                shown.join("\n"),
                through.stderr
            )
        });
        let refused: Vec<&Value> = through.transcript["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["step"] == "call-error" || s["step"] == "read-error")
            .collect();
        assert_eq!(refused.len(), spec.denials.len(), "{refused:?}");
        for d in &spec.denials {
            let step = refused
                .iter()
                .find(|s| match d.arg.0 {
                    "--read-error" => s["uri"] == d.arg.1.as_str(),
                    _ => {
                        let (name, args) = d.arg.1.split_once('=').unwrap();
                        s["name"] == name
                            && serde_json::from_str::<Value>(args)
                                .is_ok_and(|a| s["arguments"] == a)
                    }
                })
                .unwrap_or_else(|| panic!("no step for {:?} in {refused:?}", d.arg));
            check_refusal(step, &d.by);
        }
        (spec.after)(&through);
        (spec.after_wrapped)(&through);
        if let Some(f) = transcript_failure {
            panic!("{f}");
        }
        known
    }));
    let known = case.known.filter(|_| matches!(outcome, Ok(true)));
    let note = known.filter(|k| k.deliberate).map(|k| k.reason);
    let failed = match &outcome {
        Ok(true) if note.is_some() => None,
        Ok(true) => Some(case.known.unwrap().reason.to_owned()),
        Ok(false) => None,
        Err(p) => Some(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panicked".into()),
        ),
    };
    record(case, &version, failed.as_deref(), note, started.elapsed());
    match outcome {
        Err(p) => std::panic::resume_unwind(p),
        Ok(true) if note.is_some() => eprintln!(
            "DELIBERATE DIFFERENCE {id}: {} (recorded as works: true, with the note)",
            case.known.unwrap().reason
        ),
        Ok(true) => eprintln!(
            "KNOWN PROBLEM {id}: {} (recorded as works: false)",
            case.known.unwrap().reason
        ),
        Ok(false) => assert!(
            case.known.is_none(),
            "{id}: the known difference no longer shows ({}): remove `known` from this case in \
             tests/compat.rs and run scripts/compat-table.sh",
            case.known.unwrap().reason
        ),
    }
    if !update_mode() {
        check_readme_row(case, &version, failed.as_deref(), note);
    }
}

// -------------------------------------------------------------------------------------------
// Results and README.md's table
// -------------------------------------------------------------------------------------------

fn results_file() -> PathBuf {
    std::env::var_os("ROOTFENCE_COMPAT_RESULTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            // target/<profile>/rootfence -> target/compat-results.jsonl
            Path::new(env!("CARGO_BIN_EXE_rootfence"))
                .parent()
                .and_then(Path::parent)
                .expect("the binary lives in target/<profile>/")
                .join("compat-results.jsonl")
        })
}

fn update_mode() -> bool {
    std::env::var_os("ROOTFENCE_COMPAT_UPDATE").is_some_and(|v| v == "1")
}

/// The first line of a failure, without the run's temporary paths, for the table.
fn reason(failed: &str) -> String {
    let line = failed.lines().next().unwrap_or_default();
    let line = line.replace('|', "\\|");
    let mut short: String = line.chars().take(320).collect();
    if short.len() < line.len() {
        short.push('…');
    }
    short
}

fn record(case: &Case, version: &str, failed: Option<&str>, note: Option<&str>, took: Duration) {
    let line = json!({
        "case": case.id,
        "server": case.server,
        "version": version,
        "host": case.host.label(),
        "style": case.style,
        "wrap_adds": case.wrap_adds,
        "works": failed.is_none(),
        "failed": failed.map(reason),
        "note": note,
        "checked": case.checked,
        "landlock_abi": rootfence::sandbox::landlock_abi().map(|a| a.to_string()),
        "seconds": (took.as_secs_f64() * 10.0).round() / 10.0,
    });
    let path = results_file();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    // One write of one line with O_APPEND: concurrent cases never interleave.
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
}

const START: &str = "<!-- compat-table:start: generated by scripts/compat-table.sh from tests/compat.rs; do not edit -->";
const END: &str = "<!-- compat-table:end -->";
const HEADER: &str = "| Server | Version | Host | The host entry gives | `rootfence wrap` adds | Works wrapped by default | What the suite checks |\n|---|---|---|---|---|---|---|";
/// Below the table; `{abi}` is the Landlock ABI of the run.
const NOTE: &str = "Each host entry is wrapped by `rootfence wrap` without `--policy` (the built-in default \
policy, the default sandbox) and started as its host starts it; the transcript of the allowed \
work is compared with the same session run without rootfence, and what must be refused is asked \
for too; the secret planted in a `.env` inside the root and in a file outside never reaches the \
client. Linux, Landlock ABI {abi}, the official Python `mcp` SDK client, `~` a temporary home; \
where the host runs as a normal user, what it starts runs as uid 65534 (the suite itself runs as \
root in CI). Not in the suite: `mcp-server-fetch`, which needs the network (the suite runs without it).";

/// One row of the table: server, version, host, style, wrap's options, works, checked.
fn row(cells: [&str; 7]) -> String {
    let [server, version, host, style, adds, works, checked] = cells;
    let adds = if adds.is_empty() {
        "(nothing)".to_owned()
    } else {
        format!("`{adds}`")
    };
    format!("| {server} | {version} | {host} | {style} | {adds} | {works} | {checked} |")
}

/// The table's "works" cell.
fn works_cell(failed: Option<&str>, note: Option<&str>) -> String {
    match (failed, note) {
        (None, None) => "yes".to_owned(),
        (None, Some(n)) => format!("yes, one deliberate difference: {n}"),
        (Some(f), _) => format!("**no**: {}", reason(f)),
    }
}

fn case_row(case: &Case, version: &str, failed: Option<&str>, note: Option<&str>) -> String {
    let works = works_cell(failed, note);
    row([
        case.server,
        version,
        case.host.label(),
        case.style,
        case.wrap_adds,
        &works,
        case.checked,
    ])
}

fn readme_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")
}

/// The byte range of README.md's generated section (between the markers, exclusive).
fn readme_range(readme: &str) -> Option<std::ops::Range<usize>> {
    let start = readme.find(START)? + START.len();
    let end = start + readme[start..].find(END)?;
    Some(start..end)
}

fn readme_section(readme: &str) -> Option<&str> {
    readme_range(readme).map(|r| &readme[r])
}

fn render(rows: &[String], abi: &str) -> String {
    format!(
        "\n{HEADER}\n{}\n\n{}\n",
        rows.join("\n"),
        NOTE.replace("{abi}", abi)
    )
}

fn check_readme_row(case: &Case, version: &str, failed: Option<&str>, note: Option<&str>) {
    let readme = std::fs::read_to_string(readme_path()).unwrap();
    let section = readme_section(&readme).expect("README.md has the compatibility table markers");
    let want = case_row(case, version, failed, note);
    let prefix = format!("| {} | ", case.server);
    let host = format!(" | {} | {} | ", case.host.label(), case.style);
    let have = section
        .lines()
        .find(|l| l.starts_with(&prefix) && l.contains(&host));
    assert_eq!(
        have,
        Some(want.as_str()),
        "README.md's compatibility table does not say what this run shows for {}: run \
         scripts/compat-table.sh to regenerate it from a full run",
        case.id
    );
}

/// The latest result of each case, when every case has one.
fn complete_results() -> Option<Vec<Value>> {
    let text = std::fs::read_to_string(results_file()).ok()?;
    let mut latest: BTreeMap<String, Value> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).ok()?;
        latest.insert(v["case"].as_str()?.to_owned(), v);
    }
    all_cases().map(|c| latest.get(c.id).cloned()).collect()
}

/// README.md's table is exactly what the results of a complete run say (every case has a
/// result). With `ROOTFENCE_COMPAT_UPDATE=1` (scripts/compat-table.sh) it writes the table
/// instead. Without a complete results file it checks that the table has one row per case.
#[test]
fn readme_compat_table_is_the_suite_results() {
    let path = readme_path();
    let readme = std::fs::read_to_string(&path).unwrap();
    let section = readme_section(&readme).unwrap_or_else(|| {
        panic!("README.md has no `{START}` ... `{END}` section for the compatibility table")
    });
    let Some(results) = complete_results() else {
        assert!(
            !update_mode(),
            "{} does not hold a result for every case: run the whole suite first \
             (scripts/compat-table.sh does)",
            results_file().display()
        );
        eprintln!(
            "{} does not hold a result for every case: checking the table's rows only",
            results_file().display()
        );
        let rows: Vec<&str> = section.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(rows.len(), all_cases().count() + 1, "{section}");
        for c in all_cases() {
            let key = format!("| {} | ", c.server);
            let host = format!(" | {} | {} | ", c.host.label(), c.style);
            assert!(
                rows.iter()
                    .any(|r| r.starts_with(&key) && r.contains(&host)),
                "no row for {} in README.md",
                c.id
            );
        }
        return;
    };
    let rows: Vec<String> = results
        .iter()
        .map(|r| {
            let works = if r["works"] == true {
                works_cell(None, r["note"].as_str())
            } else {
                format!("**no**: {}", r["failed"].as_str().unwrap_or("failed"))
            };
            let str_of = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            row([
                &str_of("server"),
                &str_of("version"),
                &str_of("host"),
                &str_of("style"),
                &str_of("wrap_adds"),
                &works,
                &str_of("checked"),
            ])
        })
        .collect();
    let mut abis: Vec<&str> = results
        .iter()
        .map(|r| r["landlock_abi"].as_str().unwrap_or("none"))
        .collect();
    abis.sort_unstable();
    abis.dedup();
    let want = render(&rows, &abis.join(", "));
    if update_mode() {
        let mut updated = readme.clone();
        updated.replace_range(readme_range(&readme).unwrap(), &want);
        std::fs::write(&path, updated).unwrap();
        eprintln!("wrote the compatibility table into {}", path.display());
        return;
    }
    assert_eq!(
        section,
        want,
        "README.md's compatibility table differs from {}: run scripts/compat-table.sh",
        results_file().display()
    );
}

// -------------------------------------------------------------------------------------------
// The servers
// -------------------------------------------------------------------------------------------

fn node() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("node"))
        .find(|p| p.is_file())
        .map(|p| s(&p))
        .expect("node is on PATH (the npm test servers need Node.js 20 or later)")
}

fn venv_bin(name: &str) -> String {
    let p = peers_dir().join(".venv/bin").join(name);
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-test-peers.sh",
        p.display()
    );
    s(&p)
}

/// The project tree the filesystem cases work on.
fn filesystem_tree(w: &World) {
    let p = &w.project;
    std::fs::create_dir_all(p.join("sub")).unwrap();
    std::fs::write(p.join("notes.txt"), "inside the project\n").unwrap();
    std::fs::write(p.join("sub/b.txt"), "nested\n").unwrap();
    std::fs::write(p.join(".env"), format!("API_KEY={SECRET}\n")).unwrap();
    let _ = std::fs::remove_file(p.join("new.txt"));
}

/// `vscode`: the VS Code entry (`${workspaceFolder}`, whose `.vscode/mcp.json` is in the
/// project; relative paths resolve in the workspace folder, the server's working directory).
fn filesystem_spec<'a>(w: &'a World, dir_arg: &str, vscode: bool) -> Spec<'a> {
    filesystem_tree(w);
    let p = &w.project;
    let mut calls = vec![
        call("list_allowed_directories", json!({})),
        call("read_text_file", json!({"path": p.join("notes.txt")})),
        call(
            "write_file",
            json!({"path": p.join("new.txt"), "content": "written by the client\n"}),
        ),
        call(
            "edit_file",
            json!({"path": p.join("notes.txt"), "edits": [{"oldText": "inside", "newText": "edited inside"}]}),
        ),
        call("list_directory", json!({"path": p})),
        call("directory_tree", json!({"path": p.join("sub")})),
        call(
            "read_multiple_files",
            json!({"paths": [p.join("new.txt"), p.join("sub/b.txt")]}),
        ),
    ];
    if vscode {
        // VS Code starts the server in the workspace folder: relative paths resolve there.
        calls.push(call("read_text_file", json!({"path": "sub/b.txt"})));
    }
    let mut session = vec!["--steps".into(), "list-tools,call".into()];
    session.extend(opts(&calls));
    let p2 = p.clone();
    let p3 = p.clone();
    let wref = w;
    Spec {
        entry: json!({"command": node(), "args": [s(&node_entry("@modelcontextprotocol/server-filesystem")), dir_arg]}),
        session,
        denials: vec![
            call_error(
                "read_text_file",
                json!({"path": p.join(".env")}),
                Refusal::RootfenceTool("policy_deny"),
            ),
            call_error(
                "read_text_file",
                json!({"path": w.outside.join("secret.txt")}),
                Refusal::RootfenceTool("outside_roots"),
            ),
            call_error(
                "write_file",
                json!({"path": w.outside.join("planted.txt"), "content": "x"}),
                Refusal::RootfenceTool("outside_roots"),
            ),
        ],
        reset: Box::new(move || filesystem_tree(wref)),
        after: Box::new(move |_| {
            // The user's tree is what the session's work made it, nothing more.
            let mut top: Vec<String> = std::fs::read_dir(&p2)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            top.sort();
            let mut want = vec![".env", "new.txt", "notes.txt", "sub"];
            if vscode {
                want.insert(1, ".vscode");
            }
            assert_eq!(top, want, "the project's top level after the session");
            assert_eq!(
                std::fs::read_to_string(p2.join("new.txt")).unwrap(),
                "written by the client\n"
            );
            assert_eq!(
                std::fs::read_to_string(p2.join("notes.txt")).unwrap(),
                "edited inside the project\n"
            );
        }),
        after_wrapped: Box::new(move |_| {
            assert!(!p3.parent().unwrap().join("outside/planted.txt").exists());
        }),
    }
}

#[test]
fn filesystem_claude_desktop() {
    run_case("filesystem_claude_desktop", |w| {
        filesystem_spec(w, &s(&w.project), false)
    });
}

#[test]
fn filesystem_vscode() {
    run_case("filesystem_vscode", |w| {
        filesystem_spec(w, "${workspaceFolder}", true)
    });
}

#[test]
fn memory_claude_desktop() {
    run_case("memory_claude_desktop", |w| {
        let memory_js = node_entry("@modelcontextprotocol/server-memory");
        memory_spec(w, json!({"command": node(), "args": [s(&memory_js)]}))
    });
}

/// server-memory's session; `entry` starts it (`env` is added here).
fn memory_spec(w: &World, mut entry: Value) -> Spec<'_> {
    {
        // A directory of its own: wrap grants it (server-memory saves by rename beside it).
        let store = w.home.join(".mcp-memory");
        std::fs::create_dir_all(&store).unwrap();
        let file = store.join("memory.jsonl");
        let seed = r#"{"type":"entity","name":"Alice","entityType":"person","observations":["likes tea"]}"#;
        std::fs::write(&file, seed).unwrap();
        let default_store =
            node_entry("@modelcontextprotocol/server-memory").with_file_name("memory.jsonl");
        let calls = [
            call("read_graph", json!({})),
            call(
                "create_entities",
                json!({"entities": [{"name": "Bob", "entityType": "person", "observations": ["new here"]}]}),
            ),
            call(
                "add_observations",
                json!({"observations": [{"entityName": "Alice", "contents": ["drinks coffee too"]}]}),
            ),
            call(
                "create_relations",
                json!({"relations": [{"from": "Alice", "to": "Bob", "relationType": "knows"}]}),
            ),
            call("search_nodes", json!({"query": "coffee"})),
            call("open_nodes", json!({"names": ["Bob"]})),
            call("read_graph", json!({})),
        ];
        let mut session = vec!["--steps".into(), "read,list-tools,call".into()];
        session.extend(opts(&calls));
        let (f1, f2) = (file.clone(), file.clone());
        Spec {
            entry: {
                entry["env"] = json!({"MEMORY_FILE_PATH": s(&file)});
                entry
            },
            session,
            denials: vec![read_error(
                uri(&w.outside.join("secret.txt")),
                Refusal::RootfenceRpc("outside_roots"),
            )],
            reset: Box::new(move || std::fs::write(&f1, seed).unwrap()),
            after: Box::new(move |run| {
                let graph = run.transcript["steps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|s| s["name"] == "read_graph")
                    .unwrap();
                assert!(graph.to_string().contains("likes tea"), "{graph}");
                let stored = std::fs::read_to_string(&f2).unwrap();
                assert!(
                    stored.contains("Bob")
                        && stored.contains("drinks coffee too")
                        && stored.contains("knows"),
                    "the graph was not saved to MEMORY_FILE_PATH: {stored}"
                );
                assert!(
                    !default_store.exists(),
                    "the server used its default store {}",
                    default_store.display()
                );
            }),
            after_wrapped: Box::new(|_| {}),
        }
    }
}

fn git(repo: &Path, home: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_DATE", "2024-01-02T03:04:05Z")
        .env("GIT_COMMITTER_DATE", "2024-01-02T03:04:05Z")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A repository with one commit (fixed dates, so the same hash every time), a change to
/// commit, and an untracked `.env`; and a second repository outside, holding the secret.
fn git_tree(w: &World) -> (PathBuf, PathBuf) {
    let (repo, other) = (w.project.join("repo"), w.outside.join("other-repo"));
    for r in [&repo, &other] {
        let _ = std::fs::remove_dir_all(r);
        std::fs::create_dir_all(r).unwrap();
        git(r, &w.home, &["init", "-q", "-b", "main"]);
        std::fs::write(r.join("a.txt"), "first line\n").unwrap();
        git(r, &w.home, &["add", "a.txt"]);
        git(r, &w.home, &["commit", "-qm", "first commit"]);
    }
    std::fs::write(other.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    git(&other, &w.home, &["add", "secret.txt"]);
    git(&other, &w.home, &["commit", "-qm", "secret"]);
    std::fs::write(repo.join("a.txt"), "first line\nsecond line\n").unwrap();
    std::fs::write(repo.join(".env"), format!("TOKEN={SECRET}\n")).unwrap();
    (repo, other)
}

#[test]
fn git_claude_desktop() {
    run_case("git_claude_desktop", |w| {
        std::fs::write(
            w.home.join(".gitconfig"),
            "[user]\n\tname = Compat Tester\n\temail = compat@example.com\n",
        )
        .unwrap();
        let (repo, other) = git_tree(w);
        let r = || json!(repo);
        let calls = [
            call("git_status", json!({"repo_path": r()})),
            call("git_diff_unstaged", json!({"repo_path": r()})),
            call("git_add", json!({"repo_path": r(), "files": ["a.txt"]})),
            call("git_diff_staged", json!({"repo_path": r()})),
            call(
                "git_commit",
                json!({"repo_path": r(), "message": "second commit"}),
            ),
            call("git_log", json!({"repo_path": r(), "max_count": 5})),
            call("git_show", json!({"repo_path": r(), "revision": "HEAD~1"})),
            call(
                "git_branch",
                json!({"repo_path": r(), "branch_type": "local"}),
            ),
        ];
        let mut session = vec![
            "--steps".into(),
            "list-tools,call".into(),
            // The commit made in the session gets a new hash (and date) each run.
            "--mask".into(),
            r"\b[0-9a-f]{7,40}\b".into(),
        ];
        session.extend(opts(&calls));
        let (repo2, repo3, home) = (repo.clone(), repo.clone(), w.home.clone());
        let home2 = w.home.clone();
        Spec {
            entry: json!({"command": venv_bin("mcp-server-git"), "args": ["--repository", s(&repo)]}),
            session,
            denials: vec![
                // A manipulated model staging the .env to read it back: the sandbox hides it
                // from the server's own git.
                call_error(
                    "git_add",
                    json!({"repo_path": repo, "files": [".env"]}),
                    Refusal::ServerTool,
                ),
                // Another repository: refused (by the server itself too).
                call_error(
                    "git_log",
                    json!({"repo_path": other, "max_count": 5}),
                    Refusal::RootfenceTool("outside_roots"),
                ),
            ],
            reset: Box::new(move || {
                git_tree(w);
            }),
            after: Box::new(move |_| {
                assert_eq!(
                    git(&repo2, &home, &["log", "-1", "--format=%an <%ae> %s"]),
                    "Compat Tester <compat@example.com> second commit",
                    "the commit's author does not come from ~/.gitconfig"
                );
            }),
            after_wrapped: Box::new(move |_| {
                let staged = git(&repo3, &home2, &["diff", "--cached", "--name-only"]);
                assert!(!staged.contains(".env"), "the .env was staged: {staged}");
            }),
        }
    });
}

#[test]
fn time_claude_desktop() {
    run_case("time_claude_desktop", |w| {
        time_spec(w, venv_bin("mcp-server-time"))
    });
}

/// mcp-server-time's session; `command` starts it.
fn time_spec(w: &World, command: String) -> Spec<'_> {
    {
        let calls = [
            call("get_current_time", json!({"timezone": "Europe/Warsaw"})),
            call(
                "convert_time",
                json!({"source_timezone": "America/New_York", "time": "16:30", "target_timezone": "Asia/Tokyo"}),
            ),
        ];
        let mut session = vec![
            "--steps".into(),
            "read,list-tools,call,list-prompts".into(),
            // The clock: the day may change between the two runs.
            "--mask".into(),
            r"\b(Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b".into(),
        ];
        session.extend(opts(&calls));
        Spec {
            entry: json!({"command": command, "args": []}),
            session,
            denials: vec![read_error(
                uri(&w.outside.join("secret.txt")),
                Refusal::RootfenceRpc("outside_roots"),
            )],
            reset: Box::new(|| {}),
            after: Box::new(|run| {
                assert!(run.stdout.contains("+14.0h") || run.stdout.contains("+13.0h"));
            }),
            after_wrapped: Box::new(|_| {}),
        }
    }
}

#[test]
fn everything_claude_desktop() {
    run_case("everything_claude_desktop", |w| {
        let calls = [
            call("echo", json!({"message": "hi"})),
            call("get-sum", json!({"a": 2, "b": 3})),
            call("get-resource-links", json!({"count": 3})),
            call(
                "get-resource-reference",
                json!({"resourceType": "Blob", "resourceId": 3}),
            ),
            call("get-structured-content", json!({"location": "Chicago"})),
        ];
        let mut session = opts(&[
            (
                "--steps",
                "list-resources,list-templates,read,list-tools,call,list-prompts,get-prompt".into(),
            ),
            ("--read-listed", "7".into()),
            ("--read", "demo://resource/dynamic/text/1".into()),
            ("--prompt", "simple-prompt".into()),
            ("--prompt", r#"args-prompt={"city":"Paris"}"#.into()),
        ]);
        session.extend(opts(&calls));
        Spec {
            entry: json!({"command": node(), "args": [s(&node_entry("everything-latest")), "stdio"]}),
            session,
            denials: vec![read_error(
                uri(&w.outside.join("secret.txt")),
                Refusal::RootfenceRpc("outside_roots"),
            )],
            reset: Box::new(|| {}),
            after: Box::new(|run| {
                let reads = run.transcript["steps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|s| s["step"] == "read")
                    .count();
                assert_eq!(reads, 8);
            }),
            after_wrapped: Box::new(|_| {}),
        }
    });
}

#[test]
fn python_sdk_roots_files_vscode() {
    run_case("python_sdk_roots_files_vscode", |w| {
        let p = &w.project;
        std::fs::create_dir_all(p.join("docs")).unwrap();
        std::fs::write(p.join("README.txt"), "the project's readme\n").unwrap();
        std::fs::write(p.join("docs/guide.txt"), "a guide\n").unwrap();
        std::fs::write(p.join(".env"), format!("API_KEY={SECRET}\n")).unwrap();
        let session = opts(&[
            ("--steps", "list-resources,read,list-tools,call".into()),
            ("--read-listed", "10".into()),
            ("--call", "status".into()),
        ]);
        Spec {
            entry: json!({
                "command": s(&python()),
                "args": [s(&Path::new(env!("CARGO_MANIFEST_DIR")).join(ROOTS_FILES_SERVER))],
                "env": {"FILES_SERVER_TOKEN": FILES_TOKEN}
            }),
            session,
            denials: vec![
                read_error(uri(&p.join(".env")), Refusal::RootfenceRpc("policy_deny")),
                read_error(
                    uri(&w.outside.join("secret.txt")),
                    Refusal::RootfenceRpc("outside_roots"),
                ),
            ],
            reset: Box::new(|| {}),
            after: Box::new(|run| {
                let steps = run.transcript["steps"].as_array().unwrap();
                let reads: Vec<&Value> = steps.iter().filter(|s| s["step"] == "read").collect();
                // README.txt, docs/guide.txt and .vscode is skipped (a dot name).
                assert_eq!(reads.len(), 2, "{steps:?}");
                let status = steps.iter().find(|s| s["step"] == "call").unwrap();
                assert_eq!(
                    status["result"]["content"][0]["text"], "configured; 1 root(s)",
                    "{status}"
                );
            }),
            after_wrapped: Box::new(|_| {}),
        }
    });
}

#[test]
fn playwright_claude_desktop() {
    let chromium = "/usr/bin/chromium";
    if !Path::new(chromium).exists() {
        // The installer puts it there (Debian's chromium); it skips only with
        // ROOTFENCE_PEERS_NO_APT=1 or off Debian.
        eprintln!(
            "SKIPPED playwright_claude_desktop: {chromium} is not installed (scripts/install-test-peers.sh installs it)"
        );
        return;
    }
    run_case("playwright_claude_desktop", |w| {
        let page = "data:text/html,<title>rootfence</title><h1>hello</h1>\
                    <button onclick=\"this.textContent='clicked'\">press</button>";
        let calls = [
            call("browser_navigate", json!({"url": page})),
            call("browser_snapshot", json!({})),
            call(
                "browser_evaluate",
                json!({"function": "() => document.querySelector('h1').textContent + ' ' + navigator.userAgent.includes('HeadlessChrome')"}),
            ),
            call(
                "browser_click",
                json!({"element": "press button", "ref": "e3"}),
            ),
            call("browser_snapshot", json!({})),
            call("browser_close", json!({})),
        ];
        let mut session = vec![
            "--steps".into(),
            "list-tools,call".into(),
            // Playwright MCP writes each snapshot to a file under `$TMPDIR` and names it
            // relative to the working directory; the sandbox gives the server its own
            // `$TMPDIR` (a random name), so the directory differs from run to run.
            "--mask".into(),
            r"\S*\.playwright-mcp/page-[0-9TZ-]+\.yml".into(),
            // How long an action took.
            "--mask".into(),
            r"\b\d+(\.\d+)?m?s\b".into(),
        ];
        session.extend(opts(&calls));
        Spec {
            entry: json!({
                "command": node(),
                "args": [
                    s(&peers_dir().join("node/node_modules/@playwright/mcp/cli.js")),
                    "--headless",
                    "--executable-path",
                    chromium,
                ],
            }),
            session,
            denials: vec![call_error(
                "browser_navigate",
                json!({"url": uri(&w.outside.join("secret.txt"))}),
                Refusal::RootfenceTool("outside_roots"),
            )],
            reset: Box::new(|| {}),
            after: Box::new(|run| {
                assert!(
                    run.stdout.contains("clicked"),
                    "the click did not reach the page: {}",
                    run.stdout
                );
                assert!(run.stdout.contains("hello true"), "{}", run.stdout);
            }),
            after_wrapped: Box::new(|run| {
                assert!(
                    !run.stderr.contains("not granted /proc"),
                    "the browser family's /proc was withheld: {}",
                    run.stderr
                );
            }),
        }
    });
}

// -------------------------------------------------------------------------------------------
// Launchers (issue 27): uvx from `~/.local/bin`, a pyenv interpreter, a project's
// `node_modules/.bin`
// -------------------------------------------------------------------------------------------

/// `# exclude-newer:` of `tests/peers/uv/servers.txt`: offline resolutions in the suite
/// find exactly what the install script put in the cache.
fn uv_exclude_newer() -> String {
    let list = peers_dir().join("uv/servers.txt");
    let text = std::fs::read_to_string(&list).unwrap_or_else(|e| panic!("{}: {e}", list.display()));
    text.lines()
        .find_map(|l| l.strip_prefix("# exclude-newer: "))
        .expect("servers.txt names its exclude-newer date")
        .trim()
        .to_owned()
}

/// Lays uv out in the temporary home as uv's own installer does (`uv` and `uvx` in
/// `~/.local/bin`, on the host's `PATH`), with the cache the install script filled copied
/// to `~/.cache/uv`, offline. Returns the `uvx` command the entry names (`uvx`, on PATH).
fn uv_home(w: &World) -> String {
    let venv_bin = peers_dir().join("uv/venv/bin");
    let cache = peers_dir().join("uv/cache");
    assert!(
        venv_bin.join("uvx").exists() && cache.is_dir(),
        "uv or its cache is missing under tests/peers/uv: run scripts/install-test-peers.sh"
    );
    let bin = w.home.join(".local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["uv", "uvx"] {
        std::fs::copy(venv_bin.join(name), bin.join(name)).unwrap();
    }
    std::fs::create_dir_all(w.home.join(".cache")).unwrap();
    // Hard links: the cache is hundreds of megabytes, and uv writes new entries (and
    // locks) rather than changing the files it already has.
    let status = Command::new("cp")
        .arg("-al")
        .arg(&cache)
        .arg(w.home.join(".cache/uv"))
        .status()
        .expect("cp runs");
    assert!(status.success(), "cannot copy the uv cache");
    let path = std::env::var("PATH").unwrap_or_default();
    let mut env = w.env.borrow_mut();
    env.insert("PATH".into(), format!("{}:{path}", s(&bin)));
    env.insert("UV_OFFLINE".into(), "1".into());
    env.insert("UV_EXCLUDE_NEWER".into(), uv_exclude_newer());
    env.insert("UV_PYTHON_DOWNLOADS".into(), "never".into());
    "uvx".into()
}

#[test]
fn git_uvx_claude_desktop() {
    run_case("git_uvx_claude_desktop", |w| {
        let uvx = uv_home(w);
        std::fs::write(
            w.home.join(".gitconfig"),
            "[user]\n\tname = Compat Tester\n\temail = compat@example.com\n",
        )
        .unwrap();
        let (repo, other) = git_tree(w);
        let r = || json!(repo);
        let calls = [
            call("git_status", json!({"repo_path": r()})),
            call("git_diff_unstaged", json!({"repo_path": r()})),
            call("git_add", json!({"repo_path": r(), "files": ["a.txt"]})),
            call(
                "git_commit",
                json!({"repo_path": r(), "message": "second commit"}),
            ),
            call("git_log", json!({"repo_path": r(), "max_count": 5})),
        ];
        let mut session = vec![
            "--steps".into(),
            "list-tools,call".into(),
            "--mask".into(),
            r"\b[0-9a-f]{7,40}\b".into(),
        ];
        session.extend(opts(&calls));
        let (repo2, home) = (repo.clone(), w.home.clone());
        Spec {
            entry: json!({"command": uvx, "args": ["mcp-server-git@2026.10.19", "--repository", s(&repo)]}),
            session,
            denials: vec![
                call_error(
                    "git_add",
                    json!({"repo_path": repo, "files": [".env"]}),
                    Refusal::ServerTool,
                ),
                call_error(
                    "git_log",
                    json!({"repo_path": other, "max_count": 5}),
                    Refusal::RootfenceTool("outside_roots"),
                ),
            ],
            reset: Box::new(move || {
                git_tree(w);
            }),
            after: Box::new(move |_| {
                assert_eq!(
                    git(&repo2, &home, &["log", "-1", "--format=%an <%ae> %s"]),
                    "Compat Tester <compat@example.com> second commit",
                );
            }),
            after_wrapped: Box::new(|run| {
                assert!(
                    run.stderr.contains("uvx runs uv"),
                    "the start-up report does not say why ~/.local/bin is granted:\n{}",
                    run.stderr
                );
            }),
        }
    });
}

/// As in `tests/peers/uv/servers.txt`: 2025.4.25 asks for `mcp>=1.0` and fails with mcp 2.
const SQLITE_UVX_ARGS: &[&str] = &["--with", "mcp<2", "mcp-server-sqlite@2025.4.25"];

/// mcp-server-sqlite's session on `<project>/data/test.db`; `args` start it with uvx.
fn sqlite_spec(w: &World, uvx: String, mut args: Vec<String>) -> Spec<'_> {
    let data = w.project.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let db = data.join("test.db");
    let _ = std::fs::remove_file(&db);
    // The file exists, as when the user points the server at their database.
    std::fs::write(&db, "").unwrap();
    args.extend(["--db-path".to_owned(), s(&db)]);
    let calls = [
        call(
            "create_table",
            json!({"query": "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"}),
        ),
        call(
            "write_query",
            json!({"query": "INSERT INTO notes (body) VALUES ('first'), ('second')"}),
        ),
        call(
            "read_query",
            json!({"query": "SELECT id, body FROM notes ORDER BY id"}),
        ),
        call("list_tables", json!({})),
        call("describe_table", json!({"table_name": "notes"})),
        call("append_insight", json!({"insight": "two notes"})),
    ];
    let mut session = vec!["--steps".into(), "read,list-tools,call".into()];
    session.extend(opts(&calls));
    let (db1, db2) = (db.clone(), db.clone());
    Spec {
        entry: json!({"command": uvx, "args": args}),
        session,
        denials: vec![read_error(
            uri(&w.outside.join("secret.txt")),
            Refusal::RootfenceRpc("outside_roots"),
        )],
        reset: Box::new(move || std::fs::write(&db1, "").unwrap()),
        after: Box::new(move |run| {
            assert!(run.stdout.contains("second"), "{}", run.stdout);
            let len = std::fs::metadata(&db2).map(|m| m.len()).unwrap_or(0);
            assert!(len > 0, "nothing was written to {}", db2.display());
        }),
        after_wrapped: Box::new(|_| {}),
    }
}

#[test]
fn sqlite_uvx_claude_desktop() {
    run_case("sqlite_uvx_claude_desktop", |w| {
        let uvx = uv_home(w);
        sqlite_spec(
            w,
            uvx,
            SQLITE_UVX_ARGS.iter().map(|a| a.to_string()).collect(),
        )
    });
}

/// The interpreter the uv cache was filled with: the `python3` first on `PATH` (on this
/// project's machines, a pyenv shim), asked for its real executable.
fn pyenv_python() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, os; print(os.path.realpath(sys.executable))",
        ])
        .output()
        .ok()?;
    let exe = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    // `<prefix>/bin/python3.X` beside `<prefix>/lib`: a pyenv-style install.
    let prefix = exe.parent()?.parent()?;
    (prefix.join("lib").is_dir() && !exe.starts_with("/usr")).then_some(exe)
}

#[test]
fn sqlite_uvx_pyenv_python_claude_desktop() {
    let Some(python) = pyenv_python() else {
        eprintln!(
            "SKIPPED sqlite_uvx_pyenv_python_claude_desktop: python3 on PATH is not a pyenv-style install"
        );
        return;
    };
    run_case("sqlite_uvx_pyenv_python_claude_desktop", |w| {
        let uvx = uv_home(w);
        let prefix = python.parent().unwrap().parent().unwrap().to_owned();
        let mut spec = sqlite_spec(
            w,
            uvx,
            ["--python".to_owned(), s(&python)]
                .into_iter()
                .chain(SQLITE_UVX_ARGS.iter().map(|a| a.to_string()))
                .collect(),
        );
        spec.after_wrapped = Box::new(move |run| {
            let line = run
                .stderr
                .lines()
                .find(|l| l.trim_start().starts_with("profile:"))
                .unwrap_or_default();
            let granted = format!(
                "{} (read-exec, install of {}",
                prefix.display(),
                python.display()
            );
            assert!(
                line.contains(&granted),
                "the named interpreter's install is not granted read-exec: {line}"
            );
            assert!(
                !line.contains(&format!("{}/bin (read-write", prefix.display())),
                "{line}"
            );
        });
        spec
    });
}

#[test]
fn memory_node_modules_bin_claude_desktop() {
    run_case("memory_node_modules_bin_claude_desktop", |w| {
        // The project's own install: a copy of the pinned packages.
        let status = Command::new("cp")
            .arg("-a")
            .arg(peers_dir().join("node/node_modules"))
            .arg(w.project.join("node_modules"))
            .status()
            .expect("cp runs");
        assert!(status.success(), "cannot copy node_modules");
        let bin = w.project.join("node_modules/.bin/mcp-server-memory");
        let mut spec = memory_spec(w, json!({"command": s(&bin), "args": []}));
        let modules = w.project.join("node_modules");
        spec.after_wrapped = Box::new(move |run| {
            assert!(
                run.stderr.contains(&format!(
                    "{} (read-exec, packages beside",
                    modules.display()
                )),
                "the project's node_modules is not granted:\n{}",
                run.stderr
            );
        });
        spec
    });
}

#[test]
fn markitdown_uvx_claude_desktop() {
    run_case("markitdown_uvx_claude_desktop", |w| {
        let uvx = uv_home(w);
        // `<h1>Hello</h1><p>from <b>rootfence</b></p>`
        let page = "data:text/html;base64,PGgxPkhlbGxvPC9oMT48cD5mcm9tIDxiPnJvb3RmZW5jZTwvYj48L3A+";
        let calls = [call("convert_to_markdown", json!({"uri": page}))];
        let mut session = vec!["--steps".into(), "list-tools,call".into()];
        session.extend(opts(&calls));
        Spec {
            entry: json!({"command": uvx, "args": ["markitdown-mcp@0.0.1a8"]}),
            session,
            denials: vec![call_error(
                "convert_to_markdown",
                json!({"uri": uri(&w.outside.join("secret.txt"))}),
                // A `file:` URI is file access whatever the argument is called: refused
                // before the server reads it.
                Refusal::RootfenceTool("outside_roots"),
            )],
            reset: Box::new(|| {}),
            after: Box::new(|run| {
                assert!(
                    run.stdout.contains("# Hello") && run.stdout.contains("**rootfence**"),
                    "{}",
                    run.stdout
                );
            }),
            after_wrapped: Box::new(|_| {}),
        }
    });
}

#[test]
fn time_pipx_claude_desktop() {
    run_case("time_pipx_claude_desktop", |w| {
        let venv_exe = peers_dir().join("pipx/home/venvs/mcp-server-time/bin/mcp-server-time");
        assert!(
            venv_exe.exists(),
            "{} is missing: run scripts/install-test-peers.sh",
            venv_exe.display()
        );
        // pipx's layout: its bin directory (~/.local/bin) holds a link into the venv.
        let bin = w.home.join(".local/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(&venv_exe, bin.join("mcp-server-time")).unwrap();
        let path = std::env::var("PATH").unwrap_or_default();
        w.env
            .borrow_mut()
            .insert("PATH".into(), format!("{}:{path}", s(&bin)));
        let mut spec = time_spec(w, "mcp-server-time".into());
        let venv = peers_dir().join("pipx/home/venvs/mcp-server-time");
        spec.after_wrapped = Box::new(move |run| {
            assert!(
                run.stderr
                    .contains(&format!("{} (read-exec, install of", venv.display())),
                "the pipx venv is not granted:\n{}",
                run.stderr
            );
            assert!(
                run.stderr.contains("base interpreter of the venv"),
                "{}",
                run.stderr
            );
        });
        spec
    });
}

// -------------------------------------------------------------------------------------------
// Issue 27: a linked worktree; a project whose path shares a word with its git remote
// -------------------------------------------------------------------------------------------

/// A main repository (one commit, fixed dates) at `<project>/main`, its linked worktree at
/// `<project>/wt` on branch `feature` with a change to `a.txt`, a new `b.txt` and an
/// untracked `.env`; a second repository outside, holding the secret.
fn worktree_tree(w: &World) -> (PathBuf, PathBuf) {
    let (main, wt, other) = (
        w.project.join("main"),
        w.project.join("wt"),
        w.outside.join("other-repo"),
    );
    for r in [&main, &wt, &other] {
        let _ = std::fs::remove_dir_all(r);
    }
    for r in [&main, &other] {
        std::fs::create_dir_all(r).unwrap();
        git(r, &w.home, &["init", "-q", "-b", "main"]);
        std::fs::write(r.join("a.txt"), "first line\n").unwrap();
        git(r, &w.home, &["add", "a.txt"]);
        git(r, &w.home, &["commit", "-qm", "first commit"]);
    }
    std::fs::write(other.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    git(&other, &w.home, &["add", "secret.txt"]);
    git(&other, &w.home, &["commit", "-qm", "secret"]);
    git(
        &main,
        &w.home,
        &["worktree", "add", "-q", "-b", "feature", "../wt"],
    );
    std::fs::write(wt.join("a.txt"), "first line\nsecond line\n").unwrap();
    std::fs::write(wt.join("b.txt"), "new file\n").unwrap();
    std::fs::write(wt.join(".env"), format!("TOKEN={SECRET}\n")).unwrap();
    (wt, other)
}

#[test]
fn git_worktree_claude_desktop() {
    run_case("git_worktree_claude_desktop", |w| {
        std::fs::write(
            w.home.join(".gitconfig"),
            "[user]\n\tname = Compat Tester\n\temail = compat@example.com\n",
        )
        .unwrap();
        let (wt, other) = worktree_tree(w);
        let r = || json!(wt);
        let calls = [
            call("git_status", json!({"repo_path": r()})),
            call("git_diff_unstaged", json!({"repo_path": r()})),
            call("git_add", json!({"repo_path": r(), "files": ["b.txt"]})),
            call("git_diff_staged", json!({"repo_path": r()})),
            call(
                "git_commit",
                json!({"repo_path": r(), "message": "commit in the worktree"}),
            ),
            call(
                "git_create_branch",
                json!({"repo_path": r(), "branch_name": "from-the-session"}),
            ),
            call(
                "git_branch",
                json!({"repo_path": r(), "branch_type": "local"}),
            ),
            call("git_log", json!({"repo_path": r(), "max_count": 5})),
        ];
        let mut session = vec![
            "--steps".into(),
            "list-tools,call".into(),
            // The commit made in the session gets a new hash (and date) each run.
            "--mask".into(),
            r"\b[0-9a-f]{7,40}\b".into(),
        ];
        session.extend(opts(&calls));
        let main = w.project.join("main");
        let (wt2, wt3, home, home2, main2) = (
            wt.clone(),
            wt.clone(),
            w.home.clone(),
            w.home.clone(),
            main.clone(),
        );
        let hooks = std::fs::read_dir(main.join(".git/hooks")).unwrap().count();
        let config = std::fs::read_to_string(main.join(".git/config")).unwrap();
        Spec {
            entry: json!({"command": venv_bin("mcp-server-git"), "args": ["--repository", s(&wt)]}),
            session,
            denials: vec![
                call_error(
                    "git_add",
                    json!({"repo_path": wt, "files": [".env"]}),
                    Refusal::ServerTool,
                ),
                call_error(
                    "git_log",
                    json!({"repo_path": other, "max_count": 5}),
                    Refusal::RootfenceTool("outside_roots"),
                ),
            ],
            reset: Box::new(move || {
                worktree_tree(w);
            }),
            after: Box::new(move |_| {
                assert_eq!(
                    git(&wt2, &home, &["diff", "--cached", "--name-only"]),
                    "",
                    "the commit took what was staged"
                );
                assert_eq!(
                    git(&wt2, &home, &["log", "-1", "--format=%an %s"]),
                    "Compat Tester commit in the worktree"
                );
                assert!(git(&wt2, &home, &["branch"]).contains("from-the-session"));
            }),
            after_wrapped: Box::new(move |_| {
                let staged = git(&wt3, &home2, &["diff", "--cached", "--name-only"]);
                assert!(!staged.contains(".env"), "the .env was staged: {staged}");
                assert_eq!(
                    std::fs::read_dir(main2.join(".git/hooks")).unwrap().count(),
                    hooks
                );
                assert_eq!(
                    std::fs::read_to_string(main2.join(".git/config")).unwrap(),
                    config
                );
            }),
        }
    });
}

/// The project of issue 27: `~/jsmith1987/app`, its remote and git user named like its path.
fn remote_word_tree(w: &World) -> PathBuf {
    let p = w.home.join("jsmith1987/app");
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(p.join(".git")).unwrap();
    std::fs::write(
        p.join(".git/config"),
        "[core]\n\trepositoryformatversion = 0\n[remote \"origin\"]\n\
         \turl = git@github.com:jsmith1987/app.git\n\
         \tfetch = +refs/heads/*:refs/remotes/origin/*\n\
         [user]\n\tname = jsmith1987\n\temail = jsmith1987@users.noreply.github.com\n",
    )
    .unwrap();
    std::fs::write(p.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(p.join("notes.txt"), "app by jsmith1987\n").unwrap();
    std::fs::write(p.join(".env"), format!("API_KEY={SECRET}\n")).unwrap();
    p
}

#[test]
fn filesystem_remote_word_claude_desktop() {
    run_case("filesystem_remote_word_claude_desktop", |w| {
        let p = remote_word_tree(w);
        let calls = [
            call("list_allowed_directories", json!({})),
            call("read_text_file", json!({"path": p.join("notes.txt")})),
            call(
                "write_file",
                json!({"path": p.join("new.txt"), "content": "written in jsmith1987/app\n"}),
            ),
            call("list_directory", json!({"path": p})),
            call("get_file_info", json!({"path": p.join("notes.txt")})),
            call("search_files", json!({"path": p, "pattern": "*.txt"})),
        ];
        let mut session = vec![
            "--steps".into(),
            "list-tools,call".into(),
            // get_file_info's times change between the two runs.
            "--mask".into(),
            r"(created|modified|accessed): [^\n]*".into(),
        ];
        session.extend(opts(&calls));
        let p2 = p.clone();
        Spec {
            entry: json!({"command": node(), "args": [s(&node_entry("@modelcontextprotocol/server-filesystem")), "~/jsmith1987/app"]}),
            session,
            denials: vec![
                call_error(
                    "read_text_file",
                    json!({"path": p.join(".env")}),
                    Refusal::RootfenceTool("policy_deny"),
                ),
                call_error(
                    "read_text_file",
                    json!({"path": w.outside.join("secret.txt")}),
                    Refusal::RootfenceTool("outside_roots"),
                ),
            ],
            reset: Box::new(move || {
                remote_word_tree(w);
            }),
            after: Box::new(move |_| {
                assert_eq!(
                    std::fs::read_to_string(p2.join("new.txt")).unwrap(),
                    "written in jsmith1987/app\n"
                );
            }),
            after_wrapped: Box::new(|_| {}),
        }
    });
}

// -------------------------------------------------------------------------------------------
// Issue 27's Python long tail: basic-memory with a pyenv Python 3.12, serena's memory tools,
// both through uvx and both keeping state in the home, wrapped with `rootfence wrap --learn
// --yes` (their state directories come from rootfence's catalogue, src/sandbox/profiles.toml;
// the trial start learns the rest; never the home)
// -------------------------------------------------------------------------------------------

/// The cases wrapped with `--learn --yes`: their `wrap_adds` are what the trial learned.
const LEARNED_CASES: &[&str] = &[
    "basic_memory_uvx_pyenv_python_claude_desktop",
    "serena_uvx_claude_desktop",
];

/// The options after `rootfence wrap` for `id`: a learned case's trial may take minutes on a
/// loaded machine (a first uvx start builds the environment; basic-memory migrates its
/// database and indexes), each of up to four rounds.
fn learn_args(id: &str) -> &'static [&'static str] {
    if LEARNED_CASES.contains(&id) {
        &["--learn", "--yes", "--learn-timeout", "240"]
    } else {
        &[]
    }
}

/// Session options for the long-tail servers: their first answer may take a minute.
fn slow_session() -> Vec<String> {
    ["--timeout", "240", "--request-timeout", "200"]
        .map(str::to_owned)
        .to_vec()
}

/// Removes everything beneath `dir`, keeping `dir` (a learned grant names it).
fn empty_dir(dir: &Path) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
}

#[test]
fn basic_memory_uvx_pyenv_python_claude_desktop() {
    let Some(python) = common::python312() else {
        eprintln!(
            "SKIPPED basic_memory_uvx_pyenv_python_claude_desktop: no Python 3.12 (python3.12 on \
             PATH or in pyenv): basic-memory 0.24.1 requires it"
        );
        return;
    };
    run_case("basic_memory_uvx_pyenv_python_claude_desktop", |w| {
        let uvx = uv_home(w);
        let (state, notes) = (w.home.join(".basic-memory"), w.home.join("basic-memory"));
        let calls = [
            call(
                "write_note",
                json!({"title": "Wrapped server", "directory": "notes",
                       "content": "rootfence keeps this note in its own directory."}),
            ),
            call("read_note", json!({"identifier": "notes/wrapped-server"})),
            call("search_notes", json!({"query": "rootfence"})),
        ];
        let mut session = vec!["--steps".into(), "read,call".into()];
        session.extend(slow_session());
        session.extend(opts(&calls));
        let (state2, notes2, notes3) = (state.clone(), notes.clone(), notes.clone());
        let home = w.home.clone();
        Spec {
            entry: json!({"command": uvx, "args": [
                "--python", s(&python), "basic-memory@0.24.1", "mcp"]}),
            session,
            denials: vec![
                call_error(
                    "read_content",
                    json!({"path": s(&w.outside.join("secret.txt"))}),
                    Refusal::RootfenceTool("outside_roots"),
                ),
                read_error(
                    uri(&w.outside.join("secret.txt")),
                    Refusal::RootfenceRpc("outside_roots"),
                ),
            ],
            // A first start, as the user's: the learned (empty) directories stay.
            reset: Box::new(move || {
                empty_dir(&state2);
                empty_dir(&notes2);
            }),
            after: Box::new(move |run| {
                let note = notes3.join("notes/Wrapped server.md");
                let text = std::fs::read_to_string(&note)
                    .unwrap_or_else(|e| panic!("{}: {e}\n{}", note.display(), run.stdout));
                assert!(text.contains("in its own directory"), "{text}");
                assert!(
                    state.join("config.json").exists(),
                    "no config in ~/.basic-memory"
                );
            }),
            after_wrapped: Box::new(move |run| {
                // Learned, not the home: the two directories, each with why.
                assert!(
                    !run.stderr
                        .contains(&format!("{} (read-write", home.display())),
                    "the home is granted read-write:\n{}",
                    run.stderr
                );
                assert!(
                    run.stderr.contains(&format!(
                        "{} (read-exec, install of",
                        python.parent().unwrap().parent().unwrap().display()
                    )),
                    "the named python's install is not granted read-exec:\n{}",
                    run.stderr
                );
            }),
        }
    });
}

/// The host's `PATH` without the suite's own Rust toolchain. serena looks for a Rust
/// language server (`rustup`, `rust-analyzer`) from a background thread while it starts: a
/// toolchain in a directory the default sandbox does not grant (`/root/.cargo/bin` here)
/// was learned as a `--read` when the attempt came before the trial's end and not when it
/// came after (CI), so what the trial learns depended on the machine and on timing. With no
/// toolchain on `PATH` the attempt fails alike everywhere, whenever it comes.
fn without_rust_toolchain_on_path(w: &World) {
    let rust = ["rustup", "cargo", "rustc", "rust-analyzer"];
    let mut env = w.env.borrow_mut();
    let path = env.get("PATH").cloned().unwrap_or_default();
    let kept: Vec<&str> = path
        .split(':')
        .filter(|dir| !rust.iter().any(|name| Path::new(dir).join(name).exists()))
        .collect();
    env.insert("PATH".into(), kept.join(":"));
}

#[test]
fn serena_uvx_claude_desktop() {
    run_case("serena_uvx_claude_desktop", |w| {
        let uvx = uv_home(w);
        without_rust_toolchain_on_path(w);
        // A project with no source file: serena's memory tools need no language server.
        std::fs::write(w.project.join("README.md"), "# demo\n").unwrap();
        std::fs::write(w.project.join(".env"), format!("TOKEN={SECRET}\n")).unwrap();
        let calls = [
            call(
                "write_memory",
                json!({"memory_name": "decisions", "content": "Servers run wrapped by rootfence."}),
            ),
            call("list_memories", json!({})),
            call("read_memory", json!({"memory_name": "decisions"})),
        ];
        let mut session = vec!["--steps".into(), "list-tools,call".into()];
        session.extend(slow_session());
        session.extend(opts(&calls));
        let (project, project2) = (w.project.clone(), w.project.clone());
        let state = w.home.join(".serena");
        Spec {
            entry: json!({"command": uvx, "args": [
                "--from", "serena-agent@2.1.0", "serena", "start-mcp-server",
                "--project", s(&w.project), "--open-web-dashboard", "false",
                "--agent-interface", "tools"]}),
            session,
            denials: vec![call_error(
                "read_file",
                json!({"relative_path": s(&w.outside.join("secret.txt"))}),
                Refusal::RootfenceTool("outside_roots"),
            )],
            reset: Box::new(move || {
                let _ = std::fs::remove_dir_all(project.join(".serena"));
                empty_dir(&state);
            }),
            after: Box::new(move |run| {
                let memory = project2.join(".serena/memories/decisions.md");
                let text = std::fs::read_to_string(&memory)
                    .unwrap_or_else(|e| panic!("{}: {e}\n{}", memory.display(), run.stdout));
                assert!(text.contains("wrapped by rootfence"), "{text}");
            }),
            after_wrapped: Box::new(|_| {}),
        }
    });
}

// -------------------------------------------------------------------------------------------
// Node launchers (issue 27): `npx -y` from a filled npm cache (desktop-commander,
// mcp-obsidian in Claude Desktop and in Cursor), `pnpm dlx`, `bunx`. Their rows follow
// [`CASES`].
// -------------------------------------------------------------------------------------------

const DESKTOP_COMMANDER: Package = Package::NpmExec {
    name: "@wonderwhy-er/desktop-commander",
    version: "0.2.52",
};
const OBSIDIAN: Package = Package::NpmExec {
    name: "mcp-obsidian",
    version: "1.0.0",
};

/// In the order of README.md's table, after [`CASES`].
const NODE_CASES: &[Case] = &[
    Case {
        id: "desktop_commander_npx_claude_desktop",
        server: "desktop-commander",
        package: DESKTOP_COMMANDER,
        host: Host::ClaudeDesktop,
        style: "`npx -y @wonderwhy-er/desktop-commander@…`, no directory, no host roots; wrapped with `--run-arg=--root=<project>` as wrap's note says",
        wrap_adds: "--root=<project>",
        checked: "read, write, edit, list in the project; its shell runs `git status` and `git log` on the project (`~/.gitconfig` read); `.env` and outside path refused (tool error)",
        known: Some(PLACEHOLDERS),
        normal_user: false,
    },
    Case {
        id: "obsidian_npx_claude_desktop",
        server: "mcp-obsidian",
        package: OBSIDIAN,
        host: Host::ClaudeDesktop,
        style: "`npx -y mcp-obsidian@1.0.0 ~/vault`, no host roots",
        wrap_adds: "--root ~/vault",
        checked: "searches and reads notes of the vault; `.env` in the vault and outside path refused (tool error)",
        known: None,
        normal_user: false,
    },
    Case {
        id: "obsidian_npx_cursor",
        server: "mcp-obsidian",
        package: OBSIDIAN,
        host: Host::Cursor,
        style: "user-wide `~/.cursor/mcp.json` entry `npx -y mcp-obsidian@1.0.0 ~/vault`, an unrelated project open (its root sent by the host)",
        wrap_adds: "--root ~/vault",
        checked: "the host's root and `--root` do not overlap: the server keeps the vault (said on stderr) and is refused the open project; the same work as above",
        known: Some(ROOTS_ASKED),
        normal_user: false,
    },
    Case {
        id: "filesystem_pnpm_dlx_claude_desktop",
        server: "server-filesystem",
        package: Package::NpmExec {
            name: "@modelcontextprotocol/server-filesystem",
            version: "2026.8.31",
        },
        host: Host::ClaudeDesktop,
        style: "`pnpm dlx @modelcontextprotocol/server-filesystem@… <project>` (pnpm 12.21.0 installed with npm), no host roots",
        wrap_adds: "--root <project>",
        checked: "pnpm's native binary, dlx cache and store are found and granted; read, write, edit, list, tree; outside path and `.env` refused (tool error)",
        known: Some(PLACEHOLDERS),
        normal_user: false,
    },
    Case {
        id: "filesystem_bunx_vscode",
        server: "server-filesystem",
        package: Package::NpmExec {
            name: "@modelcontextprotocol/server-filesystem",
            version: "2026.8.31",
        },
        host: Host::VsCode,
        style: "`bunx @modelcontextprotocol/server-filesystem@… ${workspaceFolder}` (bun 1.4.5 installed with npm), host roots",
        wrap_adds: "--root ${workspaceFolder}",
        checked: "bun's native binary and its package cache (`~/.bun/install/cache`) are found and granted; read, write, edit, list, tree, relative paths; outside path and `.env` refused (tool error)",
        known: Some(PLACEHOLDERS),
        normal_user: false,
    },
];

/// rootfence asks a host that declares roots for them (`roots/list`) at the start of the
/// session, to bound what the server reaches by them, even when the server itself never
/// asks; the client then sees one server request more than without rootfence.
const ROOTS_ASKED: Known = Known {
    reason: "the host is asked for its roots (`roots/list`) once, by rootfence, although this \
             server never asks; everything else matches",
    deliberate: true,
    explains: only_roots_asked,
};

/// Every difference is the wrapped run's one `roots/list` server request.
fn only_roots_asked(diffs: &[Difference]) -> bool {
    diffs.len() == 1
        && diffs[0].0 == "$.server_requests"
        && diffs[0].1 == json!([])
        && diffs[0].2 == json!(["roots/list"])
}

/// Lays the npm cache the install script filled (`tests/peers/npx/cache`: its `_cacache`
/// and the `_npx` installs) out as `~/.npm`, and makes npm offline, so that `npx -y <spec>`
/// runs what the cache holds.
fn npx_home(w: &World) {
    let cache = peers_dir().join("npx/cache");
    assert!(
        cache.join("_npx").is_dir(),
        "{} is missing: run scripts/install-test-peers.sh",
        cache.display()
    );
    // Hard links: the cache is hundreds of megabytes; npm adds files, it does not edit them.
    let status = Command::new("cp")
        .arg("-al")
        .arg(&cache)
        .arg(w.home.join(".npm"))
        .status()
        .expect("cp runs");
    assert!(status.success(), "cannot copy the npx cache");
    let mut env = w.env.borrow_mut();
    env.insert("npm_config_offline".into(), "true".into());
    env.insert("npm_config_update_notifier".into(), "false".into());
}

/// A project with one commit (fixed dates: the same hash every run), a `.env` and notes.
fn commander_tree(w: &World) {
    let p = &w.project;
    let _ = std::fs::remove_dir_all(p);
    std::fs::create_dir_all(p).unwrap();
    git(p, &w.home, &["init", "-q", "-b", "main"]);
    std::fs::write(p.join("notes.txt"), "inside the project\n").unwrap();
    git(p, &w.home, &["add", "notes.txt"]);
    git(p, &w.home, &["commit", "-qm", "first commit"]);
    std::fs::write(p.join(".env"), format!("API_KEY={SECRET}\n")).unwrap();
    // What a user who keeps telemetry off has (desktop-commander's own setting): no
    // analytics traffic from either run.
    let state = w.home.join(".claude-server-commander");
    let _ = std::fs::remove_dir_all(&state);
    std::fs::create_dir_all(&state).unwrap();
    // `allowedDirectories: []` (everything) is its own first-run default; a config without
    // it confines the server to the home directory.
    std::fs::write(
        state.join("config.json"),
        r#"{"telemetryEnabled": false, "allowedDirectories": []}"#,
    )
    .unwrap();
}

#[test]
fn desktop_commander_npx_claude_desktop() {
    run_case("desktop_commander_npx_claude_desktop", |w| {
        npx_home(w);
        std::fs::write(
            w.home.join(".gitconfig"),
            "[user]\n\tname = Compat Tester\n\temail = compat@example.com\n",
        )
        .unwrap();
        commander_tree(w);
        w.wrap_args
            .borrow_mut()
            .push(format!("--run-arg=--root={}", s(&w.project)));
        let p = &w.project;
        // desktop-commander 0.2.52 answers `start_process` on the process's `exit` event,
        // which under load can come before the last `data` events of its output (seen: an
        // empty "Initial output" for `git log`); a short pause after git keeps the output
        // ahead of the exit, so the transcript is the command's, not the race's.
        let git_cmd = |args: &str| format!("git -C {} {args}; sleep 0.5", s(p));
        let calls = [
            call("read_file", json!({"path": p.join("notes.txt")})),
            call(
                "write_file",
                json!({"path": p.join("new.txt"), "content": "written by the client\n", "mode": "rewrite"}),
            ),
            call(
                "edit_block",
                json!({"file_path": p.join("notes.txt"), "old_string": "inside", "new_string": "edited inside"}),
            ),
            call("list_directory", json!({"path": p, "depth": 1})),
            call(
                "start_process",
                json!({"command": git_cmd("status --short"), "timeout_ms": 20000}),
            ),
            call(
                "start_process",
                json!({"command": git_cmd("log --format='%an %s'"), "timeout_ms": 20000}),
            ),
        ];
        let mut session = vec![
            "--steps".into(),
            "call".into(),
            // Process ids differ between runs (and the wrapped server has its own PID
            // namespace); so do the timings desktop-commander reports.
            "--mask".into(),
            r"PID \d+".into(),
            "--mask".into(),
            r"\d+(\.\d+)?\s?ms\b".into(),
        ];
        session.extend(opts(&calls));
        let (p2, home) = (p.clone(), w.home.clone());
        Spec {
            entry: json!({"command": "npx", "args": ["-y", "@wonderwhy-er/desktop-commander@0.2.52"]}),
            session,
            denials: vec![
                call_error(
                    "read_file",
                    json!({"path": p.join(".env")}),
                    Refusal::RootfenceTool("policy_deny"),
                ),
                call_error(
                    "read_file",
                    json!({"path": w.outside.join("secret.txt")}),
                    Refusal::RootfenceTool("outside_roots"),
                ),
            ],
            reset: Box::new(move || commander_tree(w)),
            after: Box::new(move |run| {
                let text = run.transcript.to_string();
                assert_eq!(
                    std::fs::read_to_string(p2.join("new.txt")).ok().as_deref(),
                    Some("written by the client\n"),
                    "{text}"
                );
                assert_eq!(
                    std::fs::read_to_string(p2.join("notes.txt")).unwrap(),
                    "edited inside the project\n",
                    "{text}"
                );
                // Its shell ran git in the project: the log and the status are there.
                assert!(
                    text.contains("Compat Tester first commit"),
                    "git log did not run: {text}"
                );
                assert!(
                    text.contains("M notes.txt"),
                    "git status did not run: {text}"
                );
                let _ = &home;
            }),
            after_wrapped: Box::new(|_| {}),
        }
    });
}

/// An Obsidian vault at `~/vault` (notes, the app's `.obsidian/` settings, a `.env`), and an
/// unrelated project (Cursor's open folder) with a file of its own.
fn vault_tree(w: &World) -> PathBuf {
    let v = w.home.join("vault");
    let _ = std::fs::remove_dir_all(&v);
    std::fs::create_dir_all(v.join("Daily")).unwrap();
    std::fs::create_dir_all(v.join(".obsidian")).unwrap();
    std::fs::write(
        v.join("Welcome.md"),
        "# Welcome\n\nThe vault's first note.\n",
    )
    .unwrap();
    std::fs::write(v.join("Daily/2026-01-02.md"), "# Daily\n\n- wrote tests\n").unwrap();
    std::fs::write(v.join(".obsidian/app.json"), "{}\n").unwrap();
    std::fs::write(v.join(".env"), format!("SYNC_TOKEN={SECRET}\n")).unwrap();
    std::fs::write(w.project.join("README.md"), "the open project\n").unwrap();
    v
}

fn obsidian_spec(w: &World) -> Spec<'_> {
    npx_home(w);
    let vault = vault_tree(w);
    let calls = [
        call("search_notes", json!({"query": "daily"})),
        call("search_notes", json!({"query": "welcome"})),
        call(
            "read_notes",
            json!({"paths": ["Welcome.md", "Daily/2026-01-02.md"]}),
        ),
    ];
    let mut session = vec![
        // Not `list-tools`: its input schemas lack `"type": "object"` (zod-to-json-schema's
        // draft-07 output), which the Python SDK client rejects; the hosts do not.
        "--steps".into(),
        "call".into(),
        "--unlisted-tools".into(),
        // What the host and this server settle on (its SDK knows no later revision).
        "--protocol".into(),
        "2024-11-05".into(),
    ];
    session.extend(opts(&calls));
    Spec {
        entry: json!({"command": "npx", "args": ["-y", "mcp-obsidian@1.0.0", s(&vault)]}),
        session,
        denials: vec![
            call_error(
                "read_notes",
                json!({"paths": [vault.join(".env")]}),
                Refusal::RootfenceTool("policy_deny"),
            ),
            call_error(
                "read_notes",
                json!({"paths": [w.outside.join("secret.txt")]}),
                Refusal::RootfenceTool("outside_roots"),
            ),
        ],
        reset: Box::new(move || {
            vault_tree(w);
        }),
        after: Box::new(|run| {
            let text = run.transcript.to_string();
            assert!(
                text.contains("wrote tests"),
                "the notes were not read: {text}"
            );
        }),
        after_wrapped: Box::new(|_| {}),
    }
}

#[test]
fn obsidian_npx_claude_desktop() {
    run_case("obsidian_npx_claude_desktop", obsidian_spec);
}

#[test]
fn obsidian_npx_cursor() {
    run_case("obsidian_npx_cursor", |w| {
        let mut spec = obsidian_spec(w);
        let (vault, project) = (w.home.join("vault"), w.project.clone());
        // The open project is not the vault's: the server is refused it.
        spec.denials.push(call_error(
            "read_notes",
            json!({"paths": [project.join("README.md")]}),
            Refusal::RootfenceTool("outside_roots"),
        ));
        spec.after_wrapped = Box::new(move |run| {
            let want = format!(
                "the host's roots ({}) and --root ({}) do not overlap: the server keeps its own --root",
                s(&project),
                s(&vault)
            );
            assert!(
                run.stderr.contains(&want),
                "not said on stderr:\n{}",
                run.stderr
            );
        });
        spec
    });
}

/// pnpm as `npm install -g pnpm` leaves it (its `bin` on the host's `PATH`, the package
/// outside the home), and the pnpm home the install script filled (its dlx cache and
/// store) under `~`, offline.
fn pnpm_home(w: &World) {
    let dir = peers_dir().join("pnpm");
    let bin = dir.join("node_modules/.bin");
    let home = dir.join("home");
    assert!(
        bin.join("pnpm").exists() && home.join(".cache/pnpm/dlx").is_dir(),
        "pnpm or its dlx cache is missing under {}: run scripts/install-test-peers.sh",
        dir.display()
    );
    for sub in [".cache", ".local/share"] {
        std::fs::create_dir_all(w.home.join(sub)).unwrap();
        let status = Command::new("cp")
            .arg("-al")
            .arg(home.join(sub).join("pnpm"))
            .arg(w.home.join(sub).join("pnpm"))
            .status()
            .expect("cp runs");
        assert!(status.success(), "cannot copy the pnpm home's {sub}/pnpm");
    }
    let path = std::env::var("PATH").unwrap_or_default();
    let mut env = w.env.borrow_mut();
    env.insert("PATH".into(), format!("{}:{path}", s(&bin)));
    env.insert("npm_config_offline".into(), "true".into());
}

#[test]
fn filesystem_pnpm_dlx_claude_desktop() {
    run_case("filesystem_pnpm_dlx_claude_desktop", |w| {
        pnpm_home(w);
        let mut spec = filesystem_spec(w, &s(&w.project), false);
        spec.entry = json!({"command": "pnpm", "args": ["dlx", "@modelcontextprotocol/server-filesystem@2026.8.31", s(&w.project)]});
        spec
    });
}

/// bun as `npm install -g bun` leaves it (its `bin` on the host's `PATH`), and the bun home
/// the install script filled (`~/.bun/install/cache`).
fn bun_home(w: &World) {
    let dir = peers_dir().join("bun");
    let bin = dir.join("node_modules/.bin");
    let cache = dir.join("home/.bun");
    assert!(
        bin.join("bunx").exists() && cache.join("install/cache").is_dir(),
        "bun or its cache is missing under {}: run scripts/install-test-peers.sh",
        dir.display()
    );
    let status = Command::new("cp")
        .arg("-al")
        .arg(&cache)
        .arg(w.home.join(".bun"))
        .status()
        .expect("cp runs");
    assert!(status.success(), "cannot copy the bun home");
    let path = std::env::var("PATH").unwrap_or_default();
    w.env
        .borrow_mut()
        .insert("PATH".into(), format!("{}:{path}", s(&bin)));
}

/// In VS Code, which starts the server in the workspace folder. Not in Claude Desktop: bunx
/// 1.4.5 lists its working directory before anything else, and Claude Desktop starts
/// servers in `/`, which the sandbox cannot let it list without letting it list every
/// directory beneath (a Landlock right covers the whole tree): wrapped, it exits before
/// `initialize` with `error: An internal error occurred (CouldntReadCurrentDirectory)`,
/// which rootfence passes on as the server's last words.
#[test]
fn filesystem_bunx_vscode() {
    run_case("filesystem_bunx_vscode", |w| {
        bun_home(w);
        let mut spec = filesystem_spec(w, "${workspaceFolder}", true);
        spec.entry = json!({"command": "bunx", "args": ["@modelcontextprotocol/server-filesystem@2026.8.31", "${workspaceFolder}"]});
        spec
    });
}
