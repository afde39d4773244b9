//! Live roots (issue 11): the OS sandbox follows the effective roots through every change.
//!
//! Every test runs the real binary the way a host runs it: no `--root`, the default sandbox
//! and policy, the host declaring roots. The test server's `read_path` reads a file with its own
//! system calls, past every protocol check, so what it can open is exactly what the kernel
//! grants the server process: the tests prove the kernel's boundary, not only the protocol's.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{Proxy, test_server};
use serde_json::{Value, json};

const EACCES: i64 = 13;

fn landlock() -> bool {
    let ok = rootfence::sandbox::landlock_abi().is_some();
    if !ok {
        eprintln!("SKIPPED: Landlock is not available on this kernel");
    }
    ok
}

fn uri(p: &Path) -> String {
    format!("file://{}", p.to_str().unwrap())
}

/// A scripted host: answers every `roots/list` it is asked with its current roots, and keeps
/// what else arrives while it waits for an answer.
struct Host {
    p: Proxy,
    roots: Vec<String>,
    next: u64,
    /// Messages that arrived while waiting for something else.
    seen: Vec<Value>,
    roots_asked: usize,
}

impl Host {
    fn start(opts: &[&str], server: &[&str], roots: &[&Path]) -> Host {
        Host {
            p: Proxy::run(opts, server),
            roots: roots.iter().map(|r| uri(r)).collect(),
            next: 100,
            seen: Vec::new(),
            roots_asked: 0,
        }
    }

    /// The next message that is not a roots question (those are answered on the way).
    fn next_message(&mut self) -> Value {
        loop {
            let v = self.p.recv();
            if v["method"] == "roots/list" && v.get("id").is_some() {
                self.roots_asked += 1;
                let roots: Vec<Value> = self.roots.iter().map(|u| json!({"uri": u})).collect();
                self.p
                    .send_json(&json!({"jsonrpc":"2.0","id":v["id"],"result":{"roots":roots}}));
                continue;
            }
            return v;
        }
    }

    /// Waits for the response to request `id`.
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

    fn initialize(&mut self, version: &str) -> Value {
        self.p.send_json(
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":version,"capabilities":{"roots":{"listChanged":true}},
            "clientInfo":{"name":"live-roots-host","version":"0"}}}),
        );
        let r = self.response(&json!(0));
        self.p
            .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        r
    }

    /// The server reads `path` itself.
    fn server_reads(&mut self, path: &Path) -> Value {
        self.call("read_path", json!({"path": path}))["result"].clone()
    }

    fn server_pid(&mut self) -> u64 {
        let r = self.call("pid", json!({}));
        r["result"]["pid"].as_u64().unwrap_or_else(|| panic!("{r}"))
    }

    /// Changes the host's roots and says so.
    fn set_roots(&mut self, roots: &[&Path]) {
        self.roots = roots.iter().map(|r| uri(r)).collect();
        self.p
            .send(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
    }

    /// Waits until a server generation other than `old_pid` answers.
    fn wait_for_new_generation(&mut self, old_pid: u64) -> u64 {
        let deadline = std::time::Instant::now() + common::PATIENCE;
        loop {
            let pid = self.server_pid();
            if pid != old_pid {
                return pid;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no new server generation; stderr:\n{}",
                self.p.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn audit_events(path: &Path, event: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == event)
        .collect()
}

struct Tree {
    _t: tempfile::TempDir,
    root: std::path::PathBuf,
    root2: std::path::PathBuf,
    outside: std::path::PathBuf,
    log: std::path::PathBuf,
}

fn tree() -> Tree {
    let t = common::tempdir();
    let base = t.path().canonicalize().unwrap();
    let (root, root2, outside) = (base.join("root"), base.join("root2"), base.join("outside"));
    for (d, text) in [
        (&root, "in root"),
        (&root2, "in root2"),
        (&outside, "outside"),
    ] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::write(d.join("f.txt"), text).unwrap();
    }
    Tree {
        log: base.join("audit.jsonl"),
        _t: t,
        root,
        root2,
        outside,
    }
}

#[test]
fn host_roots_are_granted_to_the_server_at_launch() {
    if !landlock() {
        return;
    }
    let t = tree();
    let mut h = Host::start(
        &["--audit-log", t.log.to_str().unwrap()],
        &[&test_server()],
        &[&t.root],
    );
    h.initialize("2025-06-18");
    // The server's own system calls reach the host's root, and nothing outside it.
    assert_eq!(h.server_reads(&t.root.join("f.txt"))["text"], "in root");
    let out = h.server_reads(&t.outside.join("f.txt"));
    assert_eq!(out["errno"], EACCES, "{out}");
    assert!(h.roots_asked >= 1);
    h.p.close_stdin();
    assert_eq!(h.p.exit_code(), 0);
    let starts = audit_events(&t.log, "server_start");
    assert_eq!(starts.len(), 1, "{starts:?}");
    assert_eq!(starts[0]["generation"], 1);
    assert_eq!(starts[0]["roots"], json!([uri(&t.root)]), "{}", starts[0]);
    let granted = starts[0]["sandbox"]["paths"].to_string();
    assert!(granted.contains(t.root.to_str().unwrap()), "{granted}");
    assert!(
        !h.p.stderr().contains("beyond what the sandbox granted"),
        "{}",
        h.p.stderr()
    );
}

#[test]
fn a_roots_change_moves_the_server_to_a_generation_confined_to_the_new_roots() {
    if !landlock() {
        return;
    }
    let t = tree();
    let mut h = Host::start(
        &["--audit-log", t.log.to_str().unwrap()],
        &[&test_server()],
        &[&t.root],
    );
    h.initialize("2025-06-18");
    let first = h.server_pid();
    assert_eq!(h.server_reads(&t.root2.join("f.txt"))["errno"], EACCES);

    h.set_roots(&[&t.root2]);
    let second = h.wait_for_new_generation(first);
    assert_ne!(first, second);
    // The new generation reaches root2 by its own system calls, and no longer root.
    assert_eq!(h.server_reads(&t.root2.join("f.txt"))["text"], "in root2");
    let old = h.server_reads(&t.root.join("f.txt"));
    assert_eq!(old["errno"], EACCES, "{old}");
    // The protocol layer agrees.
    let r = h.call("resources/read", json!({"uri": uri(&t.root.join("f.txt"))}));
    assert_eq!(r["error"]["data"]["reason"], "outside_roots", "{r}");
    // The old generation was stopped.
    common::eventually("the first generation exits", || {
        !common::alive(first as i32)
    });

    h.p.close_stdin();
    assert_eq!(h.p.exit_code(), 0);
    let starts = audit_events(&t.log, "server_start");
    assert_eq!(starts.len(), 2, "{starts:?}");
    assert_eq!(starts[1]["generation"], 2);
    assert_eq!(starts[1]["roots"], json!([uri(&t.root2)]));
    assert_eq!(starts[1]["trigger"], "notifications/roots/list_changed");
    let updates = audit_events(&t.log, "roots_update");
    assert!(
        updates.iter().all(|u| u.get("outside_sandbox").is_none()),
        "{updates:?}"
    );
}

#[test]
fn requests_sent_during_a_switch_each_get_exactly_one_answer() {
    if !landlock() {
        return;
    }
    let t = tree();
    let mut h = Host::start(&[], &[&test_server()], &[&t.root]);
    h.initialize("2025-06-18");
    let first = h.server_pid();
    h.set_roots(&[&t.root, &t.root2]);
    // 50 pipelined requests, sent before the host even answers the roots question.
    let mut ids = Vec::new();
    for n in 0..50u64 {
        let id = 1000 + n;
        let (method, params) = if n % 2 == 0 {
            ("read_path", json!({"path": t.root.join("f.txt")}))
        } else {
            ("ping", json!({}))
        };
        h.p.send_json(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
        ids.push(id);
    }
    let mut answers = std::collections::HashMap::new();
    while answers.len() < ids.len() {
        let v = h.next_message();
        if v.get("method").is_some() {
            continue; // notifications (list_changed)
        }
        let id = v["id"].as_u64().unwrap_or_else(|| panic!("{v}"));
        assert!(
            answers.insert(id, v.clone()).is_none(),
            "two answers for {id}"
        );
    }
    for (id, v) in &answers {
        assert!(v.get("result").is_some(), "request {id}: {v}");
        if id % 2 == 0 {
            assert_eq!(v["result"]["text"], "in root", "{v}");
        }
    }
    let second = h.wait_for_new_generation(first);
    assert_ne!(first, second);
    // Nothing more arrives for those ids.
    h.p.close_stdin();
    assert_eq!(h.p.exit_code(), 0);
}

#[test]
fn in_flight_requests_finish_on_the_old_generation_or_get_a_retry_error() {
    if !landlock() {
        return;
    }
    let t = tree();
    let mut h = Host::start(&["--restart-grace", "1s"], &[&test_server()], &[&t.root]);
    h.initialize("2025-06-18");
    let first = h.server_pid();
    h.p.send(r#"{"jsonrpc":"2.0","id":"slow","method":"slow","params":{"ms":400}}"#);
    h.p.send(r#"{"jsonrpc":"2.0","id":"never","method":"never"}"#);
    h.set_roots(&[&t.root2]);
    let second = h.wait_for_new_generation(first);
    assert_ne!(first, second);
    assert_eq!(h.response(&json!("slow"))["result"], json!({}));
    let never = h.response(&json!("never"));
    assert_eq!(never["error"]["code"], -32000, "{never}");
    let msg = never["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("restarted under new roots") && msg.contains("send the request again"),
        "{msg}"
    );
    h.p.close_stdin();
    assert_eq!(h.p.exit_code(), 0);
}

#[test]
fn the_handshake_subscriptions_and_log_level_are_renewed_for_a_new_generation() {
    if !landlock() {
        return;
    }
    let t = tree();
    // Inside the root that stays: the server writes it under the sandbox.
    let log = t.root.join("server.log");
    let mut h = Host::start(
        &[],
        &[&test_server(), "--log", log.to_str().unwrap()],
        &[&t.root, &t.root2],
    );
    h.initialize("2025-06-18");
    let first = h.server_pid();
    let sub = uri(&t.root.join("f.txt"));
    assert_eq!(
        h.call("resources/subscribe", json!({"uri": sub}))["result"],
        json!({})
    );
    assert_eq!(
        h.call("logging/setLevel", json!({"level": "debug"}))["result"],
        json!({})
    );
    // Narrowing: the kernel must narrow too, so a new generation starts.
    h.set_roots(&[&t.root]);
    h.wait_for_new_generation(first);
    h.p.close_stdin();
    assert_eq!(h.p.exit_code(), 0);
    let lines = std::fs::read_to_string(&log).unwrap();
    let count = |m: &str| {
        lines
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["method"] == m)
            .count()
    };
    assert_eq!(count("initialize"), 2, "{lines}");
    assert_eq!(count("notifications/initialized"), 2, "{lines}");
    assert_eq!(count("resources/subscribe"), 2, "{lines}");
    assert_eq!(count("logging/setLevel"), 2, "{lines}");
    // The replayed initialize is the host's own.
    let inits: Vec<Value> = lines
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["method"] == "initialize")
        .collect();
    assert_eq!(inits[0]["params"], inits[1]["params"]);
    assert!(inits[1]["id"].as_str().unwrap().starts_with("rootfence-"));
}

#[test]
fn a_new_generation_that_answers_initialize_differently_is_reported() {
    if !landlock() {
        return;
    }
    let t = tree();
    let mut h = Host::start(
        &["--audit-log", t.log.to_str().unwrap()],
        &[&test_server(), "--caps-pid"],
        &[&t.root],
    );
    h.initialize("2025-06-18");
    let first = h.server_pid();
    h.set_roots(&[&t.root2]);
    h.wait_for_new_generation(first);
    // The host is told its lists may have changed.
    let deadline = std::time::Instant::now() + common::PATIENCE;
    while !h
        .seen
        .iter()
        .any(|v| v["method"] == "notifications/tools/list_changed")
    {
        assert!(std::time::Instant::now() < deadline, "no list_changed");
        let v = h.next_message();
        h.seen.push(v);
    }
    h.p.close_stdin();
    assert_eq!(h.p.exit_code(), 0);
    assert!(
        h.p.stderr().contains("answers `initialize` differently"),
        "{}",
        h.p.stderr()
    );
    let starts = audit_events(&t.log, "server_start");
    let diffs = starts[1]["differences"].to_string();
    assert!(diffs.contains("capabilities.experimental"), "{diffs}");
}

#[test]
fn a_generation_that_cannot_start_ends_the_session_and_answers_everything() {
    if !landlock() {
        return;
    }
    let t = tree();
    // Inside root2, which both generations can reach.
    let marker = t.root2.join("once");
    let mut h = Host::start(
        &["--audit-log", t.log.to_str().unwrap()],
        &[&test_server(), "--once", marker.to_str().unwrap()],
        &[&t.root, &t.root2],
    );
    h.initialize("2025-06-18");
    h.server_pid();
    // A request the first generation holds, then a roots change: the second generation
    // exits at once (it cannot start twice), so the session ends, failing closed.
    h.p.send(r#"{"jsonrpc":"2.0","id":"held","method":"never"}"#);
    h.set_roots(&[&t.root2]);
    let r = h.response(&json!("held"));
    assert_eq!(r["error"]["code"], -32000, "{r}");
    assert_ne!(h.p.exit_code(), 0);
    let end = audit_events(&t.log, "session_end");
    assert_eq!(end.len(), 1, "{end:?}");
    assert!(
        h.p.stderr().contains("refusing to start again"),
        "{}",
        h.p.stderr()
    );
}

#[test]
fn follow_roots_launch_keeps_the_launch_grants_and_reports_what_is_beyond_them() {
    if !landlock() {
        return;
    }
    let t = tree();
    let policy = t.root.parent().unwrap().join("p.toml");
    std::fs::write(
        &policy,
        "version = 1\n[sandbox]\nfollow_roots = \"launch\"\n",
    )
    .unwrap();
    let mut h = Host::start(
        &[
            "--policy",
            "builtin:default",
            "--policy",
            policy.to_str().unwrap(),
            "--audit-log",
            t.log.to_str().unwrap(),
        ],
        &[&test_server()],
        &[&t.root],
    );
    h.initialize("2025-06-18");
    let first = h.server_pid();
    h.set_roots(&[&t.root, &t.root2]);
    // The roots answer arrives; the same generation goes on, without root2.
    let deadline = std::time::Instant::now() + common::PATIENCE;
    while !audit_events(&t.log, "roots_update")
        .iter()
        .any(|u| u.get("outside_sandbox").is_some())
    {
        assert!(std::time::Instant::now() < deadline, "{}", h.p.stderr());
        h.call("ping", json!({}));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(h.server_pid(), first);
    assert_eq!(h.server_reads(&t.root2.join("f.txt"))["errno"], EACCES);
    h.p.close_stdin();
    assert_eq!(h.p.exit_code(), 0);
    let updates = audit_events(&t.log, "roots_update");
    let last = updates.last().unwrap();
    assert_eq!(last["outside_sandbox"], json!([uri(&t.root2)]), "{last}");
    assert_eq!(audit_events(&t.log, "server_start").len(), 1);
}

#[test]
fn a_later_generations_requests_to_the_host_are_renamed_and_answered() {
    if !landlock() {
        return;
    }
    let t = tree();
    let mut h = Host::start(&[], &[&test_server()], &[&t.root]);
    h.initialize("2025-06-18");
    let first = h.server_pid();
    h.set_roots(&[&t.root2]);
    h.wait_for_new_generation(first);
    // Generation 2 asks the host something with its own id "srv-1".
    h.next += 1;
    let id = json!(h.next);
    h.p.send_json(&json!({"jsonrpc":"2.0","id":id,"method":"ask_host","params":{"method":"ping"}}));
    let ask = h.next_message();
    assert_eq!(ask["method"], "ping", "{ask}");
    let seen_id = ask["id"].as_str().unwrap_or_else(|| panic!("{ask}"));
    assert!(seen_id.starts_with("rootfence-"), "renamed: {ask}");
    h.p.send_json(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{}}));
    let r = h.response(&id);
    assert_eq!(r["result"]["host_response"]["id"], "srv-1", "{r}");
    h.p.close_stdin();
    assert_eq!(h.p.exit_code(), 0);
}

/// 2026-07-28: no initialize, roots only by MRTR. The first tool call is answered with
/// rootfence's roots question; the server starts when the answer arrives, confined to it; a
/// later answer with other roots (to the server's own MRTR question) moves the session to a
/// new generation.
#[test]
fn mrtr_roots_confine_the_server_and_a_new_answer_moves_it() {
    if !landlock() {
        return;
    }
    let t = tree();
    // The tool-argument inference off: `read_path` outside the roots would be refused on
    // the wire (tests/enforce_toolargs.rs); here the sandbox's own refusal is tested.
    let policy = t.log.with_file_name("no-infer.toml");
    std::fs::write(&policy, "version = 1\n[tools]\ninfer = \"off\"\n").unwrap();
    let mut p = Proxy::run(
        &[
            "--audit-log",
            t.log.to_str().unwrap(),
            "--policy",
            policy.to_str().unwrap(),
        ],
        &[&test_server()],
    );
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "mrtr-host", "version": "0"}
    });
    let call = |p: &mut Proxy, id: u64, name: &str, args: Value, extra: Value| -> Value {
        let mut params = json!({"name": name, "arguments": args, "_meta": meta.clone()});
        if let Value::Object(extra) = extra {
            params.as_object_mut().unwrap().extend(extra);
        }
        p.send_json(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params}));
        p.recv()
    };
    let file = t.root.join("f.txt");
    let first = call(&mut p, 1, "read_path", json!({"path": file}), json!({}));
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let key = first["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let answer = json!({"inputResponses": {key.clone(): {"roots": [{"uri": uri(&t.root)}]}}});
    let r = call(&mut p, 2, "read_path", json!({"path": file}), answer);
    assert_eq!(r["result"]["content"][0]["text"], "in root", "{r}");
    let r = call(
        &mut p,
        3,
        "read_path",
        json!({"path": t.root2.join("f.txt")}),
        json!({}),
    );
    assert_eq!(r["result"]["structuredContent"]["errno"], EACCES, "{r}");

    // The host's roots move: its next answer under rootfence's key carries other roots.
    let answer = json!({"inputResponses": {key: {"roots": [{"uri": uri(&t.root2)}]}}});
    let r = call(
        &mut p,
        4,
        "read_path",
        json!({"path": t.root2.join("f.txt")}),
        answer,
    );
    assert!(r.get("result").is_some(), "{r}");
    let r = call(
        &mut p,
        5,
        "read_path",
        json!({"path": t.root2.join("f.txt")}),
        json!({}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "in root2", "{r}");
    let r = call(&mut p, 6, "read_path", json!({"path": file}), json!({}));
    assert_eq!(r["result"]["structuredContent"]["errno"], EACCES, "{r}");
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);
    let starts = audit_events(&t.log, "server_start");
    assert_eq!(starts.len(), 2, "{starts:?}");
    assert_eq!(starts[0]["roots"], json!([uri(&t.root)]));
    assert_eq!(starts[1]["roots"], json!([uri(&t.root2)]));
}

/// A cancellation of a request the previous generation holds goes to that generation (not the
/// new one), the request gets no answer (the host cancelled it), and the previous generation,
/// holding nothing more, is stopped at once instead of after the grace period.
#[test]
fn a_cancellation_follows_its_request_to_the_previous_generation() {
    if !landlock() {
        return;
    }
    let t = tree();
    let log = t.root2.join("server.log");
    let mut h = Host::start(
        &["--restart-grace", "20s"],
        &[&test_server(), "--log", log.to_str().unwrap()],
        &[&t.root, &t.root2],
    );
    h.initialize("2025-06-18");
    let first = h.server_pid();
    h.p.send(r#"{"jsonrpc":"2.0","id":"held","method":"never"}"#);
    h.set_roots(&[&t.root2]);
    h.wait_for_new_generation(first);
    h.p.send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"held"}}"#,
    );
    // Well within the 20 s grace: the previous generation holds nothing and is stopped.
    let started = std::time::Instant::now();
    common::eventually("the previous generation is stopped", || {
        !common::alive(first as i32)
    });
    assert!(started.elapsed() < Duration::from_secs(10));
    h.call("ping", json!({}));
    assert!(
        !h.seen.iter().any(|v| v["id"] == "held"),
        "a cancelled request was answered: {:?}",
        h.seen
    );
    h.p.close_stdin();
    assert_eq!(h.p.exit_code(), 0);
    let cancels = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("notifications/cancelled"))
        .count();
    assert_eq!(cancels, 1);
}
