//! Process containment (issue 28, item 1), written as the attack: a server starts a daemon
//! (`setsid`, its parent exits, it lives on with the server's Landlock grants) and the daemon
//! must be gone when its generation is retired, when the session ends, and when rootfence
//! itself is killed with SIGKILL, and when a `serve` session is deleted. Every test runs the
//! real binary with the default sandbox (best-effort), which puts each generation in a PID
//! namespace under a minimal init.

mod common;
#[path = "common/serve_harness.rs"]
mod serve_harness;

use std::path::Path;
use std::process::Command;

use common::{Proxy, alive, eventually, test_server};
use serde_json::{Value, json};

fn uri(p: &Path) -> String {
    format!("file://{}", p.to_str().unwrap())
}

/// A host that answers `roots/list` with its current roots.
struct Host {
    p: Proxy,
    roots: Vec<String>,
    next: u64,
    seen: Vec<Value>,
}

impl Host {
    fn new(p: Proxy, roots: &[&Path]) -> Host {
        Host {
            p,
            roots: roots.iter().map(|r| uri(r)).collect(),
            next: 100,
            seen: Vec::new(),
        }
    }

    fn next_message(&mut self) -> Value {
        loop {
            let v = self.p.recv();
            if v["method"] == "roots/list" && v.get("id").is_some() {
                let roots: Vec<Value> = self.roots.iter().map(|u| json!({"uri": u})).collect();
                self.p
                    .send_json(&json!({"jsonrpc":"2.0","id":v["id"],"result":{"roots":roots}}));
                continue;
            }
            return v;
        }
    }

    fn response(&mut self, id: &Value) -> Value {
        if let Some(i) = self
            .seen
            .iter()
            .position(|v| &v["id"] == id && v.get("method").is_none())
        {
            return self.seen.remove(i);
        }
        loop {
            let v = self.next_message();
            if &v["id"] == id && v.get("method").is_none() {
                return v;
            }
            self.seen.push(v);
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = json!(self.next);
        self.p
            .send_json(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
        self.response(&id)
    }

    fn initialize(&mut self) {
        self.p.send_json(
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},
            "clientInfo":{"name":"containment-host","version":"0"}}}),
        );
        let r = self.response(&json!(0));
        assert!(r.get("result").is_some(), "{r}");
        self.p
            .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }

    fn pid(&mut self) -> i32 {
        let r = self.call("pid", json!({}));
        r["result"]["pid"].as_i64().unwrap_or_else(|| panic!("{r}")) as i32
    }

    /// The server starts a daemon; its pid as this test sees it.
    fn daemon(&mut self) -> i32 {
        let r = self.call("daemon", json!({}));
        let pid = r["result"]["pid"]
            .as_i64()
            .unwrap_or_else(|| panic!("no daemon: {r}; stderr:\n{}", self.p.stderr()))
            as i32;
        assert!(alive(pid), "the daemon {pid} is not running");
        // It really left the server's session and process group.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(
            fields[3],
            pid.to_string(),
            "the daemon leads its own session: {stat}"
        );
        pid
    }
}

fn start(roots: &[&Path]) -> Host {
    let mut h = Host::new(Proxy::run(&[], &[&test_server()]), roots);
    h.initialize();
    h
}

fn kill_on_failure(pid: i32) -> impl Drop {
    struct K(i32);
    impl Drop for K {
        fn drop(&mut self) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.0),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    K(pid)
}

#[test]
fn a_daemon_of_a_retired_generation_is_gone_after_a_roots_switch() {
    let t = common::tempdir();
    let (a, b) = (t.path().join("a"), t.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let mut h = start(&[&a]);
    let first = h.pid();
    let daemon = h.daemon();
    let _k = kill_on_failure(daemon);
    h.roots = vec![uri(&b)];
    h.p.send(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
    eventually("a new generation answers", || h.pid() != first);
    eventually("generation 1's daemon is gone", || !alive(daemon));
    assert!(!alive(first));
    // The session goes on.
    assert!(h.call("ping", json!({})).get("result").is_some());
    h.p.close_stdin();
    assert_eq!(h.p.exit_code(), 0, "{}", h.p.stderr());
}

#[test]
fn a_daemon_is_gone_when_the_session_ends() {
    let t = common::tempdir();
    let mut h = start(&[t.path()]);
    let daemon = h.daemon();
    let _k = kill_on_failure(daemon);
    h.p.close_stdin();
    assert_eq!(h.p.exit_code(), 0, "{}", h.p.stderr());
    eventually("the daemon is gone after the session", || !alive(daemon));
    let stderr = h.p.stderr();
    assert!(
        stderr.contains("processes: PID namespace with a minimal init"),
        "the report names the containment:\n{stderr}"
    );
}

#[test]
fn a_daemon_is_gone_when_rootfence_is_killed_with_sigkill() {
    let t = common::tempdir();
    let mut h = start(&[t.path()]);
    let server = h.pid();
    let daemon = h.daemon();
    let _k = kill_on_failure(daemon);
    h.p.child.kill().unwrap(); // SIGKILL: rootfence cleans nothing up.
    h.p.wait();
    eventually("the server died with rootfence", || !alive(server));
    eventually("the daemon died with rootfence", || !alive(daemon));
}

#[test]
fn the_servers_exit_status_and_signals_pass_through_the_init() {
    let t = common::tempdir();
    let mut h = start(&[t.path()]);
    h.p.send(r#"{"jsonrpc":"2.0","id":9,"method":"exit","params":{"code":7}}"#);
    assert_eq!(h.p.exit_code(), 7, "{}", h.p.stderr());

    // A server killed by a signal is reported as killed by it.
    let mut h = start(&[t.path()]);
    let pid = h.pid();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(h.p.exit_code(), 128 + 15, "{}", h.p.stderr());
}

#[test]
fn a_normal_user_gets_the_namespace_through_a_user_namespace() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIPPED: needs root to run rootfence as uid 65534");
        return;
    }
    let t = common::tempdir();
    let root = t.path().join("r");
    std::fs::create_dir_all(&root).unwrap();
    std::os::unix::fs::chown(&root, Some(65534), Some(65534)).unwrap();
    let mut perms = std::fs::metadata(t.path()).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(t.path(), perms).unwrap();
    let state = t.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::os::unix::fs::chown(&state, Some(65534), Some(65534)).unwrap();
    let mut cmd = Command::new(common::rootfence());
    std::os::unix::process::CommandExt::uid(&mut cmd, 65534);
    std::os::unix::process::CommandExt::gid(&mut cmd, 65534);
    let log = state.join("audit.jsonl");
    cmd.args(["run", "--audit-log", log.to_str().unwrap()])
        .args(["--root", root.to_str().unwrap(), "--"])
        .arg(test_server())
        .env("HOME", &state)
        .current_dir(&root);
    let p = Proxy::spawn(cmd);
    let mut h = Host::new(p, &[&root]);
    h.initialize();
    let daemon = h.daemon();
    let _k = kill_on_failure(daemon);
    h.p.close_stdin();
    assert_eq!(h.p.exit_code(), 0, "{}", h.p.stderr());
    eventually("the normal user's daemon is gone", || !alive(daemon));
    let stderr = h.p.stderr();
    assert!(
        stderr.contains("(in a user namespace)"),
        "the report says how:\n{stderr}"
    );
}

#[test]
fn a_daemon_of_a_serve_session_is_gone_after_delete() {
    let t = common::tempdir();
    let dir = t.path().display().to_string();
    let serve = serve_harness::Serve::start(&["--write", &dir], &[&test_server()]);
    let id = serve.open_session(&[]);
    let sid = ("Mcp-Session-Id", id.as_str());
    let r = serve.post(&[sid], r#"{"jsonrpc":"2.0","id":2,"method":"daemon"}"#);
    assert_eq!(r.status, 200, "{r:?}");
    let daemon = r.json()["result"]["pid"]
        .as_i64()
        .unwrap_or_else(|| panic!("no daemon: {r:?}; stderr:\n{}", serve.stderr()))
        as i32;
    let _k = kill_on_failure(daemon);
    assert!(alive(daemon));
    let r = serve.request("DELETE", "/mcp", &[sid], b"");
    assert_eq!(r.status, 204, "{r:?}");
    eventually("the deleted session's daemon is gone", || !alive(daemon));
}
