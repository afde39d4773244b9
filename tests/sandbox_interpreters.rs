//! The default profile against real interpreters and real MCP servers (issue 7), through
//! the real binary (`rootfence sandbox exec`), one sandboxed process per test.
//!
//! - node and python scripts of our own: they start, read their root, write their private
//!   temp dir, spawn a child, and are refused outside the root.
//! - `@modelcontextprotocol/server-filesystem`, `server-everything` (node) and the Python
//!   SDK server, as installed by `scripts/install-test-peers.sh` under `tests/peers` (or
//!   the directory in `ROOTFENCE_TEST_PEERS`): they answer MCP under the default profile.
//!   server-filesystem is given the sandbox root as its allowed directory, with a
//!   directory inside it denied by policy: its own checks pass everything, so only the
//!   sandbox stands between it and the denied files.
//!
//! Every test skips with a printed reason when Landlock, the interpreter or the peers are
//! missing.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// Prints a skip notice past libtest's output capture (which only intercepts the print
/// macros), so a skipped test is never silent.
fn skip(msg: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED {msg}");
}

fn rootfence() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rootfence"))
}

fn landlock_or_skip(test: &str) -> bool {
    if rootfence::sandbox::landlock_abi().is_none() {
        skip(format_args!(
            "{test}: Landlock is not available on this kernel"
        ));
        return false;
    }
    true
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|c| c.is_file())
    })
}

fn peers_dir() -> PathBuf {
    std::env::var_os("ROOTFENCE_TEST_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers"))
}

struct Dirs {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("inside.txt"), "inside").unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    Dirs {
        _tmp: tmp,
        root,
        outside,
    }
}

/// Runs a script under `sandbox exec` and returns (stdout, stderr, success).
fn exec_script(args: &[&std::ffi::OsStr]) -> (String, String, bool) {
    let out = rootfence()
        .args(["sandbox", "exec", "--network", "deny"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

#[test]
fn a_node_script_runs_under_the_default_profile() {
    if !landlock_or_skip("a_node_script_runs_under_the_default_profile") {
        return;
    }
    let Some(node) = which("node") else {
        skip(format_args!(
            "a_node_script_runs_under_the_default_profile: node not on PATH"
        ));
        return;
    };
    let d = dirs();
    let script = d.root.join("probe.js");
    std::fs::write(
        &script,
        r#"
const fs = require('fs'), os = require('os'), path = require('path'), cp = require('child_process');
const [root, outside] = process.argv.slice(2);
const r = {};
const t = (k, f) => { try { f(); r[k] = 'ok'; } catch (e) { r[k] = e.code || String(e); } };
t('read_root', () => fs.readFileSync(path.join(root, 'inside.txt')));
t('list_root', () => fs.readdirSync(root));
t('write_tmp', () => fs.writeFileSync(path.join(os.tmpdir(), 'x'), 'x'));
t('crypto', () => require('crypto').randomBytes(16));
t('child', () => cp.execFileSync(process.execPath, ['-e', '1']));
t('read_outside', () => fs.readFileSync(path.join(outside, 'secret.txt')));
t('list_outside', () => fs.readdirSync(outside));
t('write_root', () => fs.writeFileSync(path.join(root, 'new.txt'), 'x'));
t('read_ssh', () => fs.readdirSync(path.join(os.homedir(), '.ssh')));
console.log(JSON.stringify(r));
"#,
    )
    .unwrap();
    let (stdout, stderr, ok) = exec_script(&[
        "--root-ro".as_ref(),
        d.root.as_os_str(),
        "--".as_ref(),
        node.as_os_str(),
        script.as_os_str(),
        d.root.as_os_str(),
        d.outside.as_os_str(),
    ]);
    assert!(ok, "node failed under the sandbox:\n{stderr}");
    let r: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(r["read_root"], "ok", "{r}");
    assert_eq!(r["list_root"], "ok", "{r}");
    assert_eq!(r["write_tmp"], "ok", "{r}");
    assert_eq!(r["crypto"], "ok", "{r}");
    assert_eq!(r["child"], "ok", "{r}");
    assert_eq!(r["read_outside"], "EACCES", "{r}");
    assert_eq!(r["list_outside"], "EACCES", "{r}");
    assert_eq!(r["write_root"], "EACCES", "{r}");
    assert!(
        r["read_ssh"] == "EACCES" || r["read_ssh"] == "ENOENT",
        "{r}"
    );
    if rootfence::sandbox::landlock_abi().unwrap_or(0) >= 6 {
        assert!(stderr.contains("fully enforced"), "{stderr}");
    }
}

#[test]
fn a_python_script_runs_under_the_default_profile() {
    if !landlock_or_skip("a_python_script_runs_under_the_default_profile") {
        return;
    }
    let Some(python) = which("python3") else {
        skip(format_args!(
            "a_python_script_runs_under_the_default_profile: python3 not on PATH"
        ));
        return;
    };
    let d = dirs();
    let script = d.root.join("probe.py");
    std::fs::write(
        &script,
        r#"
import json, os, sys, tempfile, subprocess, ssl, asyncio
root, outside = sys.argv[1:3]
r = {}
def t(k, f):
    try:
        f(); r[k] = "ok"
    except OSError as e:
        r[k] = e.errno
t("read_root", lambda: open(os.path.join(root, "inside.txt")).read())
t("list_root", lambda: os.listdir(root))
t("write_tmp", lambda: tempfile.NamedTemporaryFile().write(b"x"))
t("child", lambda: subprocess.run([sys.executable, "-c", "1"], check=True))
t("read_outside", lambda: open(os.path.join(outside, "secret.txt")).read())
t("write_root", lambda: open(os.path.join(root, "new.txt"), "w"))
print(json.dumps(r))
"#,
    )
    .unwrap();
    let (stdout, stderr, ok) = exec_script(&[
        "--root-ro".as_ref(),
        d.root.as_os_str(),
        "--".as_ref(),
        python.as_os_str(),
        script.as_os_str(),
        d.root.as_os_str(),
        d.outside.as_os_str(),
    ]);
    assert!(ok, "python failed under the sandbox:\n{stderr}");
    let r: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(r["read_root"], "ok", "{r}");
    assert_eq!(r["list_root"], "ok", "{r}");
    assert_eq!(r["write_tmp"], "ok", "{r}");
    assert_eq!(r["child"], "ok", "{r}");
    assert_eq!(r["read_outside"], 13, "{r}");
    assert_eq!(r["write_root"], 13, "{r}");
}

/// A line-based MCP client over a child's stdio.
struct Mcp {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl Mcp {
    fn start(mut cmd: Command) -> Mcp {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Mcp {
            child,
            stdin,
            lines,
            next_id: 1,
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("no answer to {method}: {e}"));
            let v: Value = match serde_json::from_str(&line) {
                Ok(v) => v,
                Err(_) => continue,
            };
            if v["id"] == id {
                return v;
            }
        }
    }

    fn notify(&mut self, method: &str) {
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": method})
        )
        .unwrap();
        self.stdin.flush().unwrap();
    }

    fn initialize(&mut self) -> Value {
        let r = self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "rootfence-sandbox-test", "version": "0"}
            }),
        );
        self.notify("notifications/initialized");
        r
    }

    fn tool_text(&mut self, name: &str, args: Value) -> (String, bool) {
        let r = self.request("tools/call", json!({"name": name, "arguments": args}));
        let result = &r["result"];
        let text = result["content"]
            .as_array()
            .map(|c| {
                c.iter()
                    .filter_map(|x| x["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_else(|| r.to_string());
        (text, result["isError"] == true || r.get("error").is_some())
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sandboxed(root_flag: &str, root: &Path, command: &[&std::ffi::OsStr]) -> Command {
    let mut c = rootfence();
    c.args(["sandbox", "exec", "--network", "deny", root_flag])
        .arg(root)
        .arg("--")
        .args(command);
    c
}

#[test]
fn server_filesystem_runs_and_a_denied_directory_in_its_root_holds() {
    let test = "server_filesystem_runs_and_a_denied_directory_in_its_root_holds";
    if !landlock_or_skip(test) {
        return;
    }
    let entry =
        peers_dir().join("node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    let (Some(node), true) = (which("node"), entry.is_file()) else {
        skip(format_args!(
            "{test}: node or {} missing; run scripts/install-test-peers.sh \
             (or set ROOTFENCE_TEST_PEERS)",
            entry.display()
        ));
        return;
    };
    let d = dirs();
    // The sandbox root and the server's allowed directory are the same parent directory;
    // the policy denies `outside/` inside it. The server's own checks pass everything in
    // the parent: only the sandbox's carve-out keeps `outside/` unreachable.
    let parent = d.root.parent().unwrap().to_owned();
    let mut cmd = rootfence();
    cmd.args(["sandbox", "exec", "--network", "deny", "--root"])
        .arg(&parent)
        .arg("--deny")
        .arg(&d.outside)
        .arg("--")
        .args([node.as_os_str(), entry.as_os_str(), parent.as_os_str()]);
    let mut mcp = Mcp::start(cmd);
    let init = mcp.initialize();
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    let tools = mcp.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let read = if names.contains(&"read_text_file") {
        "read_text_file"
    } else {
        "read_file"
    };
    let (text, err) = mcp.tool_text(read, json!({"path": d.root.join("inside.txt")}));
    assert!(!err && text.contains("inside"), "{text}");
    let (text, err) = mcp.tool_text("list_directory", json!({"path": parent}));
    assert!(
        !err && text.contains("root") && text.contains("outside"),
        "{text}"
    );
    let (text, err) = mcp.tool_text(
        "write_file",
        json!({"path": d.root.join("written.txt"), "content": "hello"}),
    );
    assert!(!err, "{text}");
    assert_eq!(
        std::fs::read_to_string(d.root.join("written.txt")).unwrap(),
        "hello"
    );

    // The denied directory: content unreachable, nothing can be planted or moved.
    let (text, err) = mcp.tool_text(read, json!({"path": d.outside.join("secret.txt")}));
    assert!(
        err && !text.contains("secret\n") && text != "secret",
        "{text}"
    );
    assert!(
        text.contains("EACCES") || text.contains("ermission"),
        "{text}"
    );
    let (text, err) = mcp.tool_text(
        "write_file",
        json!({"path": d.outside.join("planted.txt"), "content": "x"}),
    );
    assert!(err, "{text}");
    assert!(!d.outside.join("planted.txt").exists());
    if names.contains(&"move_file") {
        let (text, err) = mcp.tool_text(
            "move_file",
            json!({"source": d.outside.join("secret.txt"), "destination": d.root.join("s.txt")}),
        );
        assert!(err, "{text}");
        assert!(d.outside.join("secret.txt").exists());
    }
}

#[test]
fn server_everything_runs_under_the_default_profile() {
    let test = "server_everything_runs_under_the_default_profile";
    if !landlock_or_skip(test) {
        return;
    }
    let peers = peers_dir().join("node/node_modules");
    let entry = [
        "everything-latest/dist/index.js",
        "everything-2025/dist/index.js",
    ]
    .iter()
    .map(|e| peers.join(e))
    .find(|p| p.is_file());
    let (Some(node), Some(entry)) = (which("node"), entry) else {
        skip(format_args!(
            "{test}: node or server-everything missing under {}; run \
             scripts/install-test-peers.sh (or set ROOTFENCE_TEST_PEERS)",
            peers.display()
        ));
        return;
    };
    let d = dirs();
    let mut mcp = Mcp::start(sandboxed(
        "--root-ro",
        &d.root,
        &[node.as_os_str(), entry.as_os_str(), "stdio".as_ref()],
    ));
    let init = mcp.initialize();
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    let (text, err) = mcp.tool_text("echo", json!({"message": "through the sandbox"}));
    assert!(!err && text.contains("through the sandbox"), "{text}");
    let resources = mcp.request("resources/list", json!({}));
    assert!(resources["result"]["resources"].is_array(), "{resources}");
}

#[test]
fn the_python_sdk_server_runs_under_the_default_profile() {
    let test = "the_python_sdk_server_runs_under_the_default_profile";
    if !landlock_or_skip(test) {
        return;
    }
    let peers = peers_dir();
    let python = peers.join(".venv/bin/python");
    let server = peers.join("py/server.py");
    if !python.is_file() || !server.is_file() {
        skip(format_args!(
            "{test}: {} or {} missing; run scripts/install-test-peers.sh \
             (or set ROOTFENCE_TEST_PEERS)",
            python.display(),
            server.display()
        ));
        return;
    }
    let d = dirs();
    let mut mcp = Mcp::start(sandboxed(
        "--root-ro",
        &d.root,
        &[python.as_os_str(), server.as_os_str()],
    ));
    let init = mcp.initialize();
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    let (text, err) = mcp.tool_text("echo", json!({"message": "hi"}));
    assert!(!err && text.contains("Echo: hi"), "{text}");
}
