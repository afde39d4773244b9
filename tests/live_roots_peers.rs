//! Live roots with real peers (issue 11): the reference filesystem server behind rootfence,
//! started exactly as a host starts a wrapped entry: no `--root`, the default sandbox and
//! policy, the host declaring roots (the official Python, TypeScript and Rust SDK clients).
//! Before issue 11 every one of these failed with EACCES: the sandbox was fixed at launch,
//! before the host's roots were known.

mod common;
#[path = "common/interop_peers.rs"]
mod interop_peers;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::Proxy;
use interop_peers::{node_entry, peers_dir, python, require_peers, rmcp_client};
use serde_json::{Value, json};

fn landlock() -> bool {
    let ok = rootfence::sandbox::landlock_abi().is_some();
    if !ok {
        eprintln!("SKIPPED: Landlock is not available on this kernel");
    }
    ok
}

struct Tree {
    _t: tempfile::TempDir,
    root: PathBuf,
    root2: PathBuf,
    outside: PathBuf,
}

const SECRET: &str = "outside-secret-7f3a";

fn tree() -> Tree {
    let t = common::tempdir();
    let base = t.path().canonicalize().unwrap();
    let (root, root2, outside) = (base.join("root"), base.join("root2"), base.join("outside"));
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(&root2).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("a.txt"), "inside the root\n").unwrap();
    std::fs::write(root.join("sub/b.txt"), "nested\n").unwrap();
    std::fs::write(root2.join("c.txt"), "inside root2\n").unwrap();
    std::fs::write(outside.join("s.txt"), SECRET).unwrap();
    Tree {
        _t: t,
        root,
        root2,
        outside,
    }
}

fn uri(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// server-filesystem through rootfence as a wrapped entry runs it: no `--root`, default
/// sandbox and policy. `dir`: the directory argument a VS Code entry gives it
/// (`${workspaceFolder}`, which is also the host's root); without one it waits for the host's
/// roots, in the background, so a first call may find it with none (directly as through
/// rootfence).
fn filesystem_through_rootfence(audit: &Path, dir: Option<&Path>) -> Vec<String> {
    let mut argv: Vec<String> = vec![
        env!("CARGO_BIN_EXE_rootfence").into(),
        "run".into(),
        "--audit-log".into(),
        audit.display().to_string(),
        "--".into(),
        "node".into(),
        node_entry("@modelcontextprotocol/server-filesystem")
            .display()
            .to_string(),
    ];
    argv.extend(dir.map(|d| d.display().to_string()));
    argv
}

fn run_client(mut cmd: Command) -> Value {
    let out = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .env(
            "XDG_STATE_HOME",
            std::env::temp_dir().join("rootfence-test-state"),
        )
        .output()
        .expect("the client runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "client failed: {stderr}\n{stdout}");
    assert!(
        !stdout.contains(SECRET),
        "the outside file leaked: {stdout}"
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// The steps every client runs: read, write and list inside the host's root, and one read
/// outside it, which must be refused.
fn sdk_args(t: &Tree) -> Vec<String> {
    vec![
        "--roots".into(),
        uri(&t.root),
        "--steps".into(),
        "call".into(),
        "--call".into(),
        "list_allowed_directories".into(),
        "--call".into(),
        format!("read_text_file={}", json!({"path": t.root.join("a.txt")})),
        "--call".into(),
        format!(
            "write_file={}",
            json!({"path": t.root.join("new.txt"), "content": "written through rootfence"})
        ),
        "--call".into(),
        format!("list_directory={}", json!({"path": t.root})),
        "--call-error".into(),
        format!(
            "read_text_file={}",
            json!({"path": t.outside.join("s.txt")})
        ),
    ]
}

fn call_text(transcript: &Value, n: usize) -> String {
    let steps: Vec<&Value> = transcript["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["step"] == "call")
        .collect();
    steps[n]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", steps[n]))
        .to_owned()
}

/// `generations`: 1 for a host that answers rootfence's early roots question (the server
/// starts confined to the answer); 2 for one that answers only once its `initialize` is
/// answered (the server starts after `roots.launch_wait_ms` under the operator roots, none
/// here, and the answer moves it to a second generation).
fn check_sdk_session(t: &Tree, transcript: &Value, audit: &Path, generations: usize) {
    assert_eq!(call_text(transcript, 1), "inside the root\n");
    assert!(call_text(transcript, 2).contains("Successfully wrote"));
    assert_eq!(
        std::fs::read_to_string(t.root.join("new.txt")).unwrap(),
        "written through rootfence"
    );
    let listing = call_text(transcript, 3);
    assert!(
        listing.contains("a.txt") && listing.contains("sub"),
        "{listing}"
    );
    let refused = transcript["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "call-error")
        .unwrap();
    // A refused tool call is a tool execution error (SEP-1303) naming the reason.
    assert_eq!(refused["error"]["isError"], true, "{refused}");
    assert_eq!(
        refused["error"]["denial"]["reason"], "outside_roots",
        "{refused}"
    );
    let starts: Vec<Value> = std::fs::read_to_string(audit)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "server_start")
        .collect();
    assert_eq!(starts.len(), generations, "{starts:?}");
    let last = starts.last().unwrap();
    assert_eq!(last["roots"], json!([uri(&t.root)]), "{last}");
}

#[test]
fn python_sdk_host_with_roots_uses_server_filesystem_under_the_default_sandbox() {
    if !landlock() {
        return;
    }
    require_peers();
    let t = tree();
    let audit = t.root.parent().unwrap().join("audit.jsonl");
    let mut cmd = Command::new(python());
    cmd.arg(peers_dir().join("py/session.py"))
        .args(sdk_args(&t))
        .arg("--")
        .args(filesystem_through_rootfence(&audit, Some(&t.root)));
    let transcript = run_client(cmd);
    check_sdk_session(&t, &transcript, &audit, 1);
}

#[test]
fn rmcp_host_with_roots_uses_server_filesystem_under_the_default_sandbox() {
    if !landlock() {
        return;
    }
    require_peers();
    let t = tree();
    let audit = t.root.parent().unwrap().join("audit.jsonl");
    let mut cmd = Command::new(rmcp_client());
    cmd.args(sdk_args(&t))
        .arg("--")
        .args(filesystem_through_rootfence(&audit, Some(&t.root)));
    let transcript = run_client(cmd);
    // rmcp answers roots/list only once its initialize is answered.
    check_sdk_session(&t, &transcript, &audit, 2);
}

#[test]
fn typescript_sdk_host_with_roots_uses_server_filesystem_under_the_default_sandbox() {
    if !landlock() {
        return;
    }
    require_peers();
    let t = tree();
    let audit = t.root.parent().unwrap().join("audit.jsonl");
    let mut cmd = Command::new("node");
    cmd.arg(peers_dir().join("node/ts_client.mjs"))
        .args(["--roots", &uri(&t.root)])
        .args(["--call", "list_allowed_directories"])
        .args([
            "--call",
            &format!("read_text_file={}", json!({"path": t.root.join("a.txt")})),
        ])
        .args([
            "--call",
            &format!(
                "write_file={}",
                json!({"path": t.root.join("new.txt"), "content": "written through rootfence"})
            ),
        ])
        .args([
            "--call",
            &format!("list_directory={}", json!({"path": t.root})),
        ])
        .args([
            "--call",
            &format!(
                "read_text_file={}",
                json!({"path": t.outside.join("s.txt")})
            ),
        ])
        .arg("--")
        .args(filesystem_through_rootfence(&audit, Some(&t.root)));
    let out = run_client(cmd);
    let calls = out["calls"].as_array().unwrap();
    let text = |n: usize| {
        calls[n]["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
    };
    assert_eq!(text(1), "inside the root\n", "{out}");
    assert!(text(2).contains("Successfully wrote"), "{out}");
    assert!(text(3).contains("a.txt"), "{out}");
    // The outside read is refused (an error, or a tool error), never served.
    let refused = &calls[4];
    assert!(
        refused.get("error").is_some() || refused["result"]["isError"] == true,
        "{refused}"
    );
    assert!(refused.to_string().contains("outside_roots"), "{refused}");
    assert!(out["roots_asked"].as_u64().unwrap() >= 1);
    assert_eq!(
        std::fs::read_to_string(t.root.join("new.txt")).unwrap(),
        "written through rootfence"
    );
    // The TypeScript SDK answers the early question: one generation, confined to the root.
    let starts: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "server_start")
        .collect();
    assert_eq!(starts.len(), 1, "{starts:?}");
    assert_eq!(starts[0]["roots"], json!([uri(&t.root)]));
}

/// A scripted host drives server-filesystem through a roots change root -> root2: after the
/// switch the server reads root2 itself (it could not before: its sandbox did not grant it),
/// requests sent during the switch each get one answer, and root is refused.
#[test]
fn server_filesystem_follows_a_roots_change() {
    if !landlock() {
        return;
    }
    require_peers();
    let t = tree();
    let audit = t.root.parent().unwrap().join("audit.jsonl");
    let argv = filesystem_through_rootfence(&audit, None);
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    let mut p = Proxy::spawn(cmd);
    let mut roots = vec![uri(&t.root)];
    let mut pending: Vec<Value> = Vec::new();
    // Answers roots questions on the way; returns the response to `id`.
    let wait = |p: &mut Proxy, roots: &Vec<String>, id: &Value, pending: &mut Vec<Value>| {
        if let Some(i) = pending.iter().position(|v| &v["id"] == id) {
            return pending.remove(i);
        }
        loop {
            let v = p.recv();
            if v["method"] == "roots/list" && v.get("id").is_some() {
                let list: Vec<Value> = roots.iter().map(|u| json!({"uri": u})).collect();
                p.send_json(&json!({"jsonrpc":"2.0","id":v["id"],"result":{"roots":list}}));
                continue;
            }
            if v.get("method").is_some() {
                continue;
            }
            if &v["id"] == id {
                return v;
            }
            pending.push(v);
        }
    };
    p.send_json(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},
        "clientInfo":{"name":"roots-host","version":"0"}}}),
    );
    wait(&mut p, &roots, &json!(0), &mut pending);
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let read = |p: &mut Proxy, id: u64, path: &Path| {
        p.send_json(
            &json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{
            "name":"read_text_file","arguments":{"path": path}}}),
        );
    };
    // The server takes its roots after `initialized`: retry until it has them.
    let mut id = 1;
    loop {
        read(&mut p, id, &t.root.join("a.txt"));
        let r = wait(&mut p, &roots, &json!(id), &mut pending);
        id += 1;
        if r["result"]["content"][0]["text"] == "inside the root\n" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(id < 200, "{r}");
    }

    roots = vec![uri(&t.root2)];
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
    // Requests during the switch: each gets exactly one answer.
    let first_during = id;
    for _ in 0..20 {
        read(&mut p, id, &t.root2.join("c.txt"));
        id += 1;
    }
    for n in first_during..id {
        let r = wait(&mut p, &roots, &json!(n), &mut pending);
        assert!(r.get("result").is_some() || r.get("error").is_some(), "{r}");
    }
    // After the switch the new server generation reads root2 by itself.
    let mut served = false;
    for _ in 0..200 {
        read(&mut p, id, &t.root2.join("c.txt"));
        let r = wait(&mut p, &roots, &json!(id), &mut pending);
        id += 1;
        if r["result"]["content"][0]["text"] == "inside root2\n" {
            served = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        served,
        "root2 never became readable; stderr:\n{}",
        p.stderr()
    );
    read(&mut p, id, &t.root.join("a.txt"));
    let r = wait(&mut p, &roots, &json!(id), &mut pending);
    assert!(!r.to_string().contains("inside the root"), "{r}");
    assert!(pending.is_empty(), "answers to nothing: {pending:?}");
    p.close_stdin();
    p.wait();
    let starts = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"server_start\""))
        .count();
    assert_eq!(starts, 2);
}
