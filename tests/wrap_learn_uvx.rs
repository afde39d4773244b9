//! Issue 27's acceptance test for `rootfence wrap --learn --yes`, through the real binary: a
//! Claude Desktop config with the five `uvx` servers users configure (mcp-server-git,
//! mcp-server-sqlite, markitdown-mcp, basic-memory with a pyenv Python 3.12, serena), uv
//! installed in `~/.local/bin` of a temporary home as uv's installer puts it, its cache
//! filled by `scripts/install-test-peers.sh` (offline). `wrap --learn --yes` starts each
//! server once under the default sandbox, learns what the failing ones need (new state
//! directories in the home, never the home; basic-memory's and serena's come from rootfence's
//! catalogue before any trial) and writes the wrap; the diff and the report name each
//! grant with why. Then every server works on the first start as Claude
//! Desktop starts it: the official Python SDK client runs initialize, tools/list and one
//! real tool call through the wrapped entry.

mod common;
#[path = "common/interop_peers.rs"]
mod interop_peers;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use interop_peers::{peers_dir, python};
use serde_json::{Value, json};

const RF: &str = env!("CARGO_BIN_EXE_rootfence");

/// Each trial start may take this long on a loaded machine (a first uvx start builds the
/// environment; basic-memory migrates and indexes before it answers `initialize`).
const LEARN_TIMEOUT: &str = "240";

/// `# exclude-newer:` of `tests/peers/uv/servers.txt` (as tests/compat.rs reads it).
fn uv_exclude_newer() -> String {
    let list = peers_dir().join("uv/servers.txt");
    let text = std::fs::read_to_string(&list).unwrap_or_else(|e| panic!("{}: {e}", list.display()));
    text.lines()
        .find_map(|l| l.strip_prefix("# exclude-newer: "))
        .expect("servers.txt names its exclude-newer date")
        .trim()
        .to_owned()
}

fn git(repo: &Path, home: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The host's environment: the test's, a temporary `HOME` with uv in `~/.local/bin` first
/// on `PATH`, uv offline on the cache the install script filled, no XDG directories.
fn host_env(home: &Path) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| !k.starts_with("XDG_") && k != "RUST_LOG")
        .collect();
    let path = std::env::var("PATH").unwrap_or_default();
    env.insert("HOME".into(), home.display().to_string());
    env.insert(
        "PATH".into(),
        format!("{}:{path}", home.join(".local/bin").display()),
    );
    env.insert("UV_OFFLINE".into(), "1".into());
    env.insert("UV_EXCLUDE_NEWER".into(), uv_exclude_newer());
    env.insert("UV_PYTHON_DOWNLOADS".into(), "never".into());
    env
}

/// uv as its installer lays it out (`uv`, `uvx` in `~/.local/bin`), the filled cache
/// hard-linked to `~/.cache/uv`.
fn uv_home(home: &Path) {
    let venv_bin = peers_dir().join("uv/venv/bin");
    let cache = peers_dir().join("uv/cache");
    assert!(
        venv_bin.join("uvx").exists() && cache.is_dir(),
        "uv or its cache is missing under tests/peers/uv: run scripts/install-test-peers.sh"
    );
    let bin = home.join(".local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["uv", "uvx"] {
        std::fs::copy(venv_bin.join(name), bin.join(name)).unwrap();
    }
    std::fs::create_dir_all(home.join(".cache")).unwrap();
    let status = Command::new("cp")
        .arg("-al")
        .arg(&cache)
        .arg(home.join(".cache/uv"))
        .status()
        .expect("cp runs");
    assert!(status.success(), "cannot copy the uv cache");
}

/// One server of the config: its name, its entry, and the tool call that shows it works.
struct Server {
    name: &'static str,
    entry: Value,
    call: (&'static str, Value),
    /// Text the call's result holds.
    expect: &'static str,
}

#[test]
fn wrap_learn_yes_makes_the_five_uvx_servers_start_on_the_first_start() {
    if rootfence::sandbox::landlock_abi().is_none() {
        eprintln!("SKIPPED: Landlock is not available on this kernel");
        return;
    }
    interop_peers::require_peers();
    let Some(py312) = common::python312() else {
        eprintln!(
            "SKIPPED: no Python 3.12 (python3.12 on PATH or in pyenv): basic-memory 0.24.1 \
             requires it"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (home, project) = (base.join("home"), base.join("project"));
    for d in [&home, &project] {
        std::fs::create_dir_all(d).unwrap();
    }
    uv_home(&home);
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\n\tname = Uvx Tester\n\temail = uvx@example.com\n",
    )
    .unwrap();
    let repo = project.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &home, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "first line\n").unwrap();
    git(&repo, &home, &["add", "a.txt"]);
    git(&repo, &home, &["commit", "-qm", "first commit"]);
    let data = project.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("notes.db"), "").unwrap();
    let code = project.join("code");
    std::fs::create_dir_all(&code).unwrap();
    std::fs::write(code.join("README.md"), "# demo\n").unwrap();
    let s = |p: &Path| p.display().to_string();

    let servers = [
        Server {
            name: "git",
            entry: json!({"command": "uvx", "args": [
                "mcp-server-git@2026.10.19", "--repository", s(&repo)]}),
            call: ("git_log", json!({"repo_path": s(&repo), "max_count": 1})),
            expect: "first commit",
        },
        Server {
            name: "sqlite",
            entry: json!({"command": "uvx", "args": [
                "--with", "mcp<2", "mcp-server-sqlite@2025.4.25",
                "--db-path", s(&data.join("notes.db"))]}),
            call: (
                "create_table",
                json!({"query": "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"}),
            ),
            expect: "Table created",
        },
        Server {
            name: "markitdown",
            entry: json!({"command": "uvx", "args": ["markitdown-mcp@0.0.1a8"]}),
            // `<h1>Hello</h1>`
            call: (
                "convert_to_markdown",
                json!({"uri": "data:text/html;base64,PGgxPkhlbGxvPC9oMT4="}),
            ),
            expect: "# Hello",
        },
        Server {
            name: "basic-memory",
            entry: json!({"command": "uvx", "args": [
                "--python", s(&py312), "basic-memory@0.24.1", "mcp"]}),
            call: (
                "write_note",
                json!({"title": "First start", "directory": "notes",
                       "content": "written on the first start"}),
            ),
            expect: "First start",
        },
        Server {
            name: "serena",
            entry: json!({"command": "uvx", "args": [
                "--from", "serena-agent@2.1.0", "serena", "start-mcp-server",
                "--project", s(&code), "--open-web-dashboard", "false",
                "--agent-interface", "tools"]}),
            call: (
                "write_memory",
                json!({"memory_name": "first-start", "content": "written on the first start"}),
            ),
            expect: "first-start",
        },
    ];

    let config = home.join(".config/Claude/claude_desktop_config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let map: serde_json::Map<String, Value> = servers
        .iter()
        .map(|sv| (sv.name.to_owned(), sv.entry.clone()))
        .collect();
    std::fs::write(
        &config,
        serde_json::to_string_pretty(&json!({ "mcpServers": map })).unwrap(),
    )
    .unwrap();

    let env = host_env(&home);
    let out = Command::new(RF)
        .arg("wrap")
        .arg(&config)
        .args(["--rootfence-path", RF, "--learn", "--yes"])
        .args(["--learn-timeout", LEARN_TIMEOUT])
        .env_clear()
        .envs(&env)
        .stdin(Stdio::null())
        .output()
        .expect("rootfence wrap runs");
    let (diff, report) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(out.status.code(), Some(0), "wrap --learn --yes:\n{report}");

    // Each server was tried; the two that keep state in the home learned their own new
    // directories, each shown in the diff and named with why in the report.
    for sv in &servers {
        assert!(
            report.contains(&format!("rootfence: learn: starting `{}` once", sv.name)),
            "`{}` was not tried:\n{report}",
            sv.name
        );
    }
    for (name, state) in [
        ("basic-memory", home.join(".basic-memory")),
        ("basic-memory", home.join("basic-memory")),
        ("serena", home.join(".serena")),
    ] {
        // Learned by the trial, or known from rootfence's catalogue (matched by the PyPI
        // distribution the uvx command runs): either way named with why.
        let learned = format!(
            "`{name}` needs --write {}: a new state directory: the server was denied creating",
            state.display()
        );
        let known = format!("--write {} (rootfence's catalogue (PyPI ", state.display());
        assert!(
            report.contains(&learned) || report.contains(&known),
            "the report does not name {} with why:\n{report}",
            state.display()
        );
        // The config is pretty-printed: one argument per line.
        let added: Vec<&str> = diff
            .lines()
            .filter_map(|l| l.strip_prefix('+'))
            .map(|l| l.trim().trim_end_matches(','))
            .collect();
        let quoted = format!("\"{}\"", state.display());
        assert!(
            added
                .windows(2)
                .any(|w| w[0] == "\"--write\"" && w[1] == quoted),
            "the diff does not show --write {}:\n{diff}",
            state.display()
        );
        assert!(state.is_dir(), "{} was not created", state.display());
    }

    let wrapped: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    for sv in &servers {
        let entry = &wrapped["mcpServers"][sv.name];
        assert_eq!(
            entry["command"], RF,
            "`{}` is not wrapped: {entry}",
            sv.name
        );
        let args: Vec<String> = entry["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect();
        // Never the home, nor a place that holds it, read-write.
        for w in args.windows(2).filter(|w| w[0] == "--write") {
            assert!(
                !home.starts_with(&w[1]),
                "`{}` got --write {}: {entry}",
                sv.name,
                w[1]
            );
        }
        // The first start after the wrap, as Claude Desktop starts it (in `/`, no roots).
        let (tool, arguments) = &sv.call;
        let out = Command::new(python())
            .arg(peers_dir().join("py/session.py"))
            .args(["--timeout", "240", "--request-timeout", "200"])
            .args(["--steps", "list-tools,call"])
            .arg("--call")
            .arg(format!("{tool}={arguments}"))
            .arg("--")
            .arg(entry["command"].as_str().unwrap())
            .args(&args)
            .env_clear()
            .envs(&env)
            .current_dir("/")
            .stdin(Stdio::null())
            .output()
            .expect("the Python SDK client starts");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(
            out.status.success(),
            "`{}` does not work on its first start after the wrap:\n{stderr}",
            sv.name
        );
        let t: Value = serde_json::from_str(&stdout).unwrap();
        let steps = t["steps"].as_array().unwrap();
        let tools = steps
            .iter()
            .find(|st| st["step"] == "list-tools")
            .and_then(|st| st["result"]["tools"].as_array())
            .unwrap_or_else(|| panic!("`{}`: no tools/list: {stdout}", sv.name));
        assert!(
            tools.iter().any(|tl| tl["name"] == *tool),
            "`{}` lists no {tool}",
            sv.name
        );
        let called = steps
            .iter()
            .find(|st| st["step"] == "call")
            .unwrap_or_else(|| panic!("`{}`: no call: {stdout}", sv.name));
        assert_eq!(
            called["result"]["isError"], false,
            "`{}`: {called}",
            sv.name
        );
        assert!(
            called["result"].to_string().contains(sv.expect),
            "`{}`: {called}",
            sv.name
        );
        assert!(
            stderr.contains("rootfence: sandbox (best-effort): landlock ABI"),
            "`{}` ran without rootfence's sandbox:\n{stderr}",
            sv.name
        );
    }
    // The state landed where it was learned.
    assert!(home.join("basic-memory/notes/First start.md").exists());
    assert!(code.join(".serena/memories/first-start.md").exists());
}
