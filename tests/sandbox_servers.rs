//! Real servers under the default sandbox, wrapped exactly as `rootfence wrap` writes their
//! host entry and started the way the host starts it (the entry's command and args, its
//! `env` on top of the host's environment, the host's working directory, no shell), with
//! the default policy (issue 12 items 1–3, issue 13 item 12).
//!
//! - server-memory keeps using the file its entry's `MEMORY_FILE_PATH` names (wrap passes
//!   the name and grants the file's directory); without `--env` the start-up summary names
//!   the variable as dropped, and with `--env` but no grant it says the server cannot open
//!   the file.
//! - a Python SDK server that exits without its config variable starts, and the project
//!   granted for its script is the nearest one (a `pyproject.toml` higher up does not expose
//!   its siblings), named in the summary and the `session_start` record.
//! - server-filesystem with directory arguments (Claude Desktop, no host roots) and with
//!   `${workspaceFolder}` (VS Code) serves its directory and nothing outside it.
//! - mcp-server-git `--repository R` reads `~/.gitconfig` (the commit's author).
//! - With `/proc` granted, another process's environment stays unreadable (Landlock's
//!   ptrace scoping), which is what lets the browser profile grant `/proc`.
//!
//! Each test skips with a printed reason when Landlock, node, python or the peers are
//! missing (`scripts/install-test-peers.sh` installs the peers).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Proxy;
use serde_json::{Value, json};

fn skip(msg: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED {msg}");
}

fn peers_dir() -> PathBuf {
    std::env::var_os("ROOTFENCE_TEST_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers"))
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|c| c.is_file())
    })
}

/// Landlock, and every path in `needs`, or a printed skip.
fn ready(test: &str, needs: &[&Path]) -> bool {
    if rootfence::sandbox::landlock_abi().is_none() {
        skip(format_args!("{test}: Landlock is not available"));
        return false;
    }
    for n in needs {
        if !n.exists() {
            skip(format_args!(
                "{test}: {} is missing (run scripts/install-test-peers.sh)",
                n.display()
            ));
            return false;
        }
    }
    true
}

fn node_peer(rel: &str) -> PathBuf {
    peers_dir().join("node/node_modules").join(rel)
}

struct World {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    home: PathBuf,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let home = base.join("home");
    std::fs::create_dir_all(&home).unwrap();
    World {
        _tmp: tmp,
        base,
        home,
    }
}

impl World {
    /// Writes a host config holding `servers` under `key` at `file`, runs `rootfence wrap`
    /// on it (no policy: the built-in default) as the user would, and returns the wrapped
    /// entries and wrap's stderr.
    fn wrap(&self, file: &Path, key: &str, servers: Value, extra: &[&str]) -> (Value, String) {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            file,
            serde_json::to_string_pretty(&json!({ key: servers })).unwrap(),
        )
        .unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_rootfence"))
            .arg("wrap")
            .arg(file)
            .args(["--rootfence-path", env!("CARGO_BIN_EXE_rootfence")])
            .args(extra)
            .env("HOME", &self.home)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(0), "wrap failed: {err}");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        (v[key].clone(), err)
    }

    /// Starts an entry as a host does: `command` with `args` (after `expand`), the entry's
    /// `env` on top of the host's environment, in `cwd`, no shell.
    fn start(&self, entry: &Value, cwd: &Path, expand: &dyn Fn(&str) -> String) -> Proxy {
        let mut cmd = Command::new(expand(entry["command"].as_str().unwrap()));
        for a in entry["args"].as_array().unwrap() {
            cmd.arg(expand(a.as_str().unwrap()));
        }
        if let Some(env) = entry.get("env").and_then(Value::as_object) {
            for (k, v) in env {
                cmd.env(k, expand(v.as_str().unwrap()));
            }
        }
        cmd.current_dir(cwd).env("HOME", &self.home);
        Proxy::spawn(cmd)
    }
}

fn args_of(entry: &Value) -> Vec<String> {
    entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect()
}

/// `tools/call` and its result (or error).
fn call(p: &mut Proxy, id: u64, tool: &str, args: Value) -> Value {
    p.send_json(&json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args}
    }));
    let r = p.recv();
    assert_eq!(r["id"], id, "{r}");
    r
}

/// The text of a tool result's content.
fn text(r: &Value) -> String {
    r["result"]["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|i| i["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_else(|| r.to_string())
}

fn ok_result(r: &Value) -> bool {
    r.get("result").is_some() && r["result"]["isError"] != true
}

fn finish(mut p: Proxy) -> String {
    p.close_stdin();
    p.expect_eof();
    let code = p.exit_code();
    let err = p.stderr();
    assert_eq!(code, 0, "{err}");
    err
}

#[test]
fn server_memory_keeps_using_the_file_its_host_entry_names() {
    let t = "server_memory_keeps_using_the_file_its_host_entry_names";
    let memory_js = node_peer("@modelcontextprotocol/server-memory/dist/index.js");
    let Some(node) = which("node") else {
        return skip(format_args!("{t}: node not on PATH"));
    };
    if !ready(t, &[&memory_js]) {
        return;
    }
    let w = world();
    let store = w.home.join(".mcp-memory");
    std::fs::create_dir_all(&store).unwrap();
    let file = store.join("memory.jsonl");
    std::fs::write(
        &file,
        r#"{"type":"entity","name":"Alice","entityType":"person","observations":["likes tea"]}"#,
    )
    .unwrap();
    let (servers, err) = w.wrap(
        &w.base.join("claude_desktop_config.json"),
        "mcpServers",
        json!({"memory": {
            "command": node.to_str().unwrap(),
            "args": [memory_js.to_str().unwrap()],
            "env": {"MEMORY_FILE_PATH": file.to_str().unwrap()}
        }}),
        &[],
    );
    let args = args_of(&servers["memory"]);
    let opts = &args[..args.iter().position(|a| a == "--").unwrap()];
    assert_eq!(
        opts,
        [
            "run",
            "--env",
            "MEMORY_FILE_PATH",
            "--write",
            store.to_str().unwrap()
        ],
        "{err}"
    );
    assert!(
        err.contains("env passed to the server: MEMORY_FILE_PATH (--env)"),
        "{err}"
    );

    // Started as Claude Desktop starts it: cwd `/`, the entry's env added.
    let mut p = w.start(&servers["memory"], Path::new("/"), &|s| s.to_owned());
    p.initialize("2025-06-18");
    let graph = call(&mut p, 1, "read_graph", json!({}));
    assert!(text(&graph).contains("Alice"), "{graph}\n{}", p.stderr());
    let created = call(
        &mut p,
        2,
        "create_entities",
        json!({"entities": [{"name": "Bob", "entityType": "person", "observations": ["new"]}]}),
    );
    assert!(ok_result(&created), "{created}\n{}", p.stderr());
    let stderr = finish(p);
    let stored = std::fs::read_to_string(&file).unwrap();
    assert!(
        stored.contains("Alice") && stored.contains("Bob"),
        "{stored}"
    );
    assert!(
        !memory_js.with_file_name("memory.jsonl").exists(),
        "the server fell back to its default store"
    );
    // The summary names the grant, and MEMORY_FILE_PATH was not dropped.
    assert!(
        stderr.contains(&format!("{} (read-write, write)", store.display())),
        "{stderr}"
    );
    let dropped = stderr
        .lines()
        .find(|l| l.contains("  env: "))
        .unwrap_or_default()
        .to_owned();
    assert!(!dropped.contains("MEMORY_FILE_PATH"), "{dropped}");
}

/// The messages a user sees when an entry was wrapped by hand without what wrap derives.
#[test]
fn startup_names_the_dropped_variable_and_the_ungranted_path() {
    let t = "startup_names_the_dropped_variable_and_the_ungranted_path";
    let memory_js = node_peer("@modelcontextprotocol/server-memory/dist/index.js");
    let Some(node) = which("node") else {
        return skip(format_args!("{t}: node not on PATH"));
    };
    if !ready(t, &[&memory_js]) {
        return;
    }
    let w = world();
    let store = w.home.join(".mcp-memory");
    std::fs::create_dir_all(&store).unwrap();
    let file = store.join("memory.jsonl");
    for (opts, want) in [
        (vec![], "dropped: ".to_owned()),
        (
            vec!["--env", "MEMORY_FILE_PATH"],
            format!(
                "env MEMORY_FILE_PATH names {}, which the sandbox does not grant",
                file.display()
            ),
        ),
    ] {
        let mut args = vec!["run"];
        args.extend(opts.iter().copied());
        args.extend(["--", node.to_str().unwrap(), memory_js.to_str().unwrap()]);
        let entry = json!({
            "command": env!("CARGO_BIN_EXE_rootfence"),
            "args": args,
            "env": {"MEMORY_FILE_PATH": file.to_str().unwrap(), "SSH_AUTH_SOCK": "/tmp/agent.sock"}
        });
        let mut p = w.start(&entry, Path::new("/"), &|s| s.to_owned());
        p.initialize("2025-06-18");
        let stderr = finish(p);
        let env_line = stderr
            .lines()
            .find(|l| l.contains("  env: "))
            .unwrap_or_default();
        assert!(stderr.contains(&want), "{want}\n{stderr}");
        // Names only, never values; agent sockets stay out.
        assert!(env_line.contains("SSH_AUTH_SOCK"), "{env_line}");
        assert!(!stderr.contains("/tmp/agent.sock"), "{stderr}");
        if opts.is_empty() {
            assert!(env_line.contains("MEMORY_FILE_PATH"), "{env_line}");
            assert!(env_line.contains("rootfence run --env NAME"), "{env_line}");
        }
    }
}

#[test]
fn a_python_server_that_needs_its_config_variable_starts_with_the_nearest_project() {
    let t = "a_python_server_that_needs_its_config_variable_starts_with_the_nearest_project";
    let python = peers_dir().join(".venv/bin/python");
    if !ready(t, &[&python]) {
        return;
    }
    let w = world();
    // A monorepo with a pyproject.toml at its top; the server is its own project below.
    let ws = w.base.join("ws");
    let srv = ws.join("tools/weather");
    std::fs::create_dir_all(&srv).unwrap();
    std::fs::write(ws.join("pyproject.toml"), "[project]\nname = \"ws\"\n").unwrap();
    std::fs::write(ws.join("credentials.txt"), "TOP-SECRET-SIBLING").unwrap();
    std::fs::write(
        srv.join("pyproject.toml"),
        "[project]\nname = \"weather\"\n",
    )
    .unwrap();
    let script = srv.join("server.py");
    std::fs::write(
        &script,
        format!(
            r#"import os, sys
token = os.environ.get("WEATHER_API_TOKEN")
if not token:
    sys.exit("WEATHER_API_TOKEN is not set")
from mcp.server.mcpserver import MCPServer
server = MCPServer("weather")

@server.tool(description="Whether the server is configured")
def configured() -> str:
    return "configured" if token == "tok-123" else "wrong token"

@server.tool(description="Reads a sibling project's file")
def peek() -> str:
    try:
        return open({sibling:?}).read()
    except OSError as e:
        return f"refused: errno {{e.errno}}"

server.run()
"#,
            sibling = ws.join("credentials.txt").to_str().unwrap()
        ),
    )
    .unwrap();
    let audit = w.base.join("audit.jsonl");
    let (servers, _) = w.wrap(
        &w.base.join(".cursor/mcp.json"),
        "mcpServers",
        json!({"weather": {
            "command": python.to_str().unwrap(),
            "args": [script.to_str().unwrap()],
            "env": {"WEATHER_API_TOKEN": "tok-123"}
        }}),
        &[&format!("--run-arg=--audit-log={}", audit.display())],
    );
    let mut p = w.start(&servers["weather"], &w.base, &|s| s.to_owned());
    let init = p.initialize("2025-06-18");
    assert!(init.get("result").is_some(), "{init}\n{}", p.stderr());
    assert_eq!(
        text(&call(&mut p, 1, "configured", json!({}))),
        "configured"
    );
    let peek = text(&call(&mut p, 2, "peek", json!({})));
    assert!(peek.starts_with("refused: errno 13"), "{peek}");
    let stderr = finish(p);
    assert!(!stderr.contains("tok-123"), "a value leaked: {stderr}");
    let grant = format!(
        "{} (read-exec, project of the script {})",
        srv.display(),
        script.display()
    );
    assert!(stderr.contains(&grant), "{grant}\n{stderr}");
    assert!(
        !stderr.contains(&format!("{} (read-exec", ws.display())),
        "{stderr}"
    );
    // The server_start record names it too.
    let start: Value = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["event"] == "server_start")
        .unwrap();
    let paths = start["sandbox"]["paths"].as_array().unwrap();
    let project = paths
        .iter()
        .find(|p| p["path"] == srv.to_str().unwrap())
        .unwrap_or_else(|| panic!("{paths:?}"));
    assert_eq!(
        project["origin"],
        format!("profile: project of the script {}", script.display())
    );
}

#[test]
fn server_filesystem_serves_the_directories_its_entry_names() {
    let t = "server_filesystem_serves_the_directories_its_entry_names";
    let fs_js = node_peer("@modelcontextprotocol/server-filesystem/dist/index.js");
    let Some(node) = which("node") else {
        return skip(format_args!("{t}: node not on PATH"));
    };
    if !ready(t, &[&fs_js]) {
        return;
    }
    let w = world();
    let project = w.base.join("project");
    let outside = w.base.join("outside");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(project.join("notes.txt"), "inside the project").unwrap();
    std::fs::write(outside.join("secret.txt"), "OUTSIDE-SECRET").unwrap();

    // Claude Desktop: the directory as an argument, no roots from the host.
    let (desktop, err) = w.wrap(
        &w.base.join("claude_desktop_config.json"),
        "mcpServers",
        json!({"files": {"command": node.to_str().unwrap(), "args": [fs_js.to_str().unwrap(), project.to_str().unwrap()]}}),
        &[],
    );
    assert!(
        err.contains(&format!(
            "roots from its command line: {} (--root)",
            project.display()
        )),
        "{err}"
    );
    // VS Code: ${workspaceFolder}, kept for the host to expand.
    let (vscode, err) = w.wrap(
        &project.join(".vscode/mcp.json"),
        "servers",
        json!({"files": {"type": "stdio", "command": node.to_str().unwrap(), "args": [fs_js.to_str().unwrap(), "${workspaceFolder}"]}}),
        &[],
    );
    assert!(
        args_of(&vscode["files"])
            .windows(2)
            .any(|w| w == ["--root", "${workspaceFolder}"]),
        "{err}"
    );
    let ws = project.to_str().unwrap().to_owned();
    let expand = move |s: &str| s.replace("${workspaceFolder}", &ws);
    for (entry, cwd) in [
        (&desktop["files"], Path::new("/")),
        (&vscode["files"], project.as_path()),
    ] {
        let mut p = w.start(entry, cwd, &expand);
        p.initialize("2025-06-18");
        let listed = call(&mut p, 1, "list_directory", json!({"path": project}));
        assert!(
            text(&listed).contains("notes.txt"),
            "{listed}\n{}",
            p.stderr()
        );
        let read = call(
            &mut p,
            2,
            "read_text_file",
            json!({"path": project.join("notes.txt")}),
        );
        assert_eq!(text(&read), "inside the project", "{read}");
        let out = call(
            &mut p,
            3,
            "read_text_file",
            json!({"path": outside.join("secret.txt")}),
        );
        assert!(!out.to_string().contains("OUTSIDE-SECRET"), "{out}");
        assert!(!ok_result(&out), "{out}");
        finish(p);
    }
}

#[test]
fn mcp_server_git_reads_the_users_gitconfig() {
    let t = "mcp_server_git_reads_the_users_gitconfig";
    let server = peers_dir().join(".venv/bin/mcp-server-git");
    let Some(git) = which("git") else {
        return skip(format_args!("{t}: git not on PATH"));
    };
    if !ready(t, &[&server]) {
        return;
    }
    let w = world();
    std::fs::write(
        w.home.join(".gitconfig"),
        "[user]\n\tname = Gitconfig Reader\n\temail = reader@example.com\n",
    )
    .unwrap();
    std::fs::write(
        w.home.join(".git-credentials"),
        "https://u:TOKEN@example.com\n",
    )
    .unwrap();
    let repo = w.base.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let g = |args: &[&str]| {
        let o = Command::new(&git)
            .args(args)
            .current_dir(&repo)
            .env("HOME", &w.home)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    };
    g(&["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a").unwrap();
    g(&["add", "a.txt"]);
    g(&["commit", "-qm", "first"]);

    let (servers, err) = w.wrap(
        &w.base.join("claude_desktop_config.json"),
        "mcpServers",
        json!({"git": {"command": server.to_str().unwrap(), "args": ["--repository", repo.to_str().unwrap()]}}),
        &[],
    );
    assert!(
        err.contains(&format!("roots from its command line: {}", repo.display())),
        "{err}"
    );
    let mut p = w.start(&servers["git"], Path::new("/"), &|s| s.to_owned());
    p.initialize("2025-06-18");
    let status = call(&mut p, 1, "git_status", json!({"repo_path": repo}));
    assert!(ok_result(&status), "{status}\n{}", p.stderr());
    std::fs::write(repo.join("b.txt"), "b").unwrap();
    let added = call(
        &mut p,
        2,
        "git_add",
        json!({"repo_path": repo, "files": ["b.txt"]}),
    );
    assert!(ok_result(&added), "{added}\n{}", p.stderr());
    let committed = call(
        &mut p,
        3,
        "git_commit",
        json!({"repo_path": repo, "message": "second"}),
    );
    assert!(ok_result(&committed), "{committed}\n{}", p.stderr());
    let stderr = finish(p);
    // The author comes from ~/.gitconfig, read inside the sandbox.
    assert_eq!(
        g(&["log", "-1", "--format=%an <%ae>"]),
        "Gitconfig Reader <reader@example.com>"
    );
    assert!(
        stderr.contains(&format!(
            "{} (read, git configuration)",
            w.home.join(".gitconfig").display()
        )),
        "{stderr}"
    );
    let credentials = w.home.join(".git-credentials").display().to_string();
    assert!(!stderr.contains(&credentials), "{stderr}");
}

/// With `/proc` granted read-write, Landlock's ptrace scoping keeps another process's
/// `environ`, `maps`, `io`, `cwd` and descriptors unreadable and its `mem` unwritable for a
/// confined process without `CAP_SYS_PTRACE`, and `/proc/sys` stays root's, as measured on
/// Linux 6.18: that is what lets the browser profile grant `/proc`, where the
/// server's child processes (Chromium's) read their own `/proc/<pid>`. Run as an
/// unprivileged uid (65534 when the tests run as root), with the other process of the
/// same uid so that only the sandbox stands in the way.
#[test]
fn with_proc_granted_another_processes_environment_stays_unreadable() {
    use std::os::unix::process::CommandExt;
    let t = "with_proc_granted_another_processes_environment_stays_unreadable";
    if !ready(t, &[]) {
        return;
    }
    let root = nix::unistd::geteuid().is_root();
    let as_user = |c: &mut Command| {
        if root {
            c.uid(65534).gid(65534);
        }
    };
    let mut other = Command::new("sleep");
    other.arg("30").env("OTHER_SECRET", "hunter2-environ");
    as_user(&mut other);
    let mut other = other.spawn().unwrap();
    let pid = other.id();
    let script = format!(
        "for f in environ maps io; do head -c 64 /proc/{pid}/$f >/dev/null 2>&1 && echo \"$f READABLE\" || echo \"$f denied\"; done; \
         readlink /proc/{pid}/cwd >/dev/null 2>&1 && echo 'cwd READABLE' || echo 'cwd denied'; \
         cat /proc/{pid}/environ 2>/dev/null | tr '\\0' '\\n' | grep -c hunter2; \
         (printf x >/proc/{pid}/mem) 2>/dev/null && echo 'mem WRITABLE' || echo 'mem write denied'; \
         (head -c 1 /proc/{pid}/fd/0) 2>/dev/null && echo 'fd READABLE' || echo 'fd denied'; \
         (echo 1 >/proc/sys/vm/drop_caches) 2>/dev/null && echo 'sysctl WRITABLE' || echo 'sysctl write denied'; \
         sh -c 'head -1 /proc/self/status >/dev/null && echo child-self ok'"
    );
    // `chromium` marks the command line as the browser family: the profile grants /proc.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rootfence"));
    cmd.args(["sandbox", "exec", "--", "sh", "-c", &script, "chromium"])
        .env("HOME", "/nonexistent");
    as_user(&mut cmd);
    let o = cmd.output().unwrap();
    let _ = other.kill();
    let _ = other.wait();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("/proc (read-write, browser child processes"),
        "{err}"
    );
    for want in [
        "environ denied",
        "maps denied",
        "io denied",
        "cwd denied",
        "mem write denied",
        "fd denied",
        "sysctl write denied",
        "child-self ok",
    ] {
        assert!(out.contains(want), "{want}: {out}\n{err}");
    }
    assert!(
        !out.contains("READABLE") && !out.contains("WRITABLE"),
        "{out}"
    );

    // As root (CAP_SYS_PTRACE) the kernel lets environ through, so /proc is withheld.
    if root {
        let o = Command::new(env!("CARGO_BIN_EXE_rootfence"))
            .args([
                "sandbox",
                "exec",
                "--",
                "sh",
                "-c",
                "head -c1 /proc/1/environ >/dev/null 2>&1 && echo READ || echo denied",
                "chromium",
            ])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(out.contains("denied"), "{out}\n{err}");
        assert!(
            err.contains("not granted /proc: the server would hold CAP_SYS_PTRACE"),
            "{err}"
        );
    }
}

/// Chromium, run as Playwright runs it (headless, `--no-sandbox`,
/// `--disable-dev-shm-usage`), renders a page under the browser profile: its child
/// processes read their own `/proc/<pid>`, which the profile grants when the server does
/// not hold `CAP_SYS_PTRACE`. Skips when `/usr/bin/chromium` is not installed (Debian's
/// `chromium` package).
#[test]
fn chromium_renders_a_page_under_the_browser_profile() {
    use std::os::unix::process::CommandExt;
    let t = "chromium_renders_a_page_under_the_browser_profile";
    let chromium = Path::new("/usr/bin/chromium");
    if !ready(t, &[chromium]) {
        return;
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rootfence"));
    cmd.args([
        "sandbox",
        "exec",
        "--",
        "sh",
        "-c",
        "exec chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
         --user-data-dir=\"$TMPDIR/profile\" --dump-dom 'data:text/html,<p>rendered-in-the-sandbox</p>'",
        "chromium",
    ])
    .env("HOME", "/nonexistent")
    .stdin(std::process::Stdio::null());
    if nix::unistd::geteuid().is_root() {
        cmd.uid(65534).gid(65534);
    }
    let o = cmd.output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        out.contains("<p>rendered-in-the-sandbox</p>"),
        "{out}\n{}",
        err.lines()
            .filter(|l| !l.contains("dbus"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The errors and warnings of the new `run` flags, through the binary: a pattern that
/// would pass every variable is refused before anything starts; a `--root` or `--write`
/// the host did not expand (`${workspaceFolder}` with no folder open) is skipped with a
/// warning and the server still starts.
#[test]
fn run_flag_errors_say_what_to_do() {
    let t = "run_flag_errors_say_what_to_do";
    if !ready(t, &[]) {
        return;
    }
    let o = Command::new(env!("CARGO_BIN_EXE_rootfence"))
        .args(["run", "--env", "*", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--env \"*\": `*` alone would pass every variable, including agent sockets and credentials; name the variables, or a prefix such as `MYSERVER_*`"),
        "{err}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_rootfence"))
        .args(["run", "--env", "A=B", "--", "true"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("a variable name cannot contain `=`"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    let mut p = Proxy::run(
        &[
            "--root",
            "${workspaceFolder}",
            "--write",
            "${workspaceFolder}/state",
        ],
        &[&common::test_server()],
    );
    let init = p.initialize("2025-06-18");
    assert!(init.get("result").is_some(), "{init}\n{}", p.stderr());
    let err = finish(p);
    assert!(
        err.contains("warning: --root ${workspaceFolder}: the host did not expand this variable (is a folder open?); not used as a root"),
        "{err}"
    );
    assert!(
        err.contains(
            "warning: --write ${workspaceFolder}/state: holds a variable the host did not expand"
        ),
        "{err}"
    );
}
