//! Issue 13, items 3, 9 and 10, through the real binary: a hostile or broken peer cannot
//! leave a host request unanswered, forge what the host said, or grow rootfence's memory.
//!
//! The memory bounds are asserted on rootfence's peak resident set (`VmHWM`), read while it
//! runs: each flood test states its bound next to what was measured when it was set.

mod common;

use std::time::Duration;

use common::{Proxy, test_server};
use serde_json::{Value, json};

/// rootfence's peak resident set so far, in MiB; `None` once it has exited (a zombie's
/// status has no `VmHWM`, and it may exit between a `try_wait` and this read).
fn peak_rss_mib(p: &Proxy) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", p.child.id())).ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())?;
    Some(kb / 1024)
}

fn emit(p: &mut Proxy, id: u64, params: Value) {
    p.send_json(&json!({"jsonrpc":"2.0","id":id,"method":"emit","params":params}));
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Item 9: every kind of unreadable answer still answers the request it was meant for.
#[test]
fn unreadable_server_answers_still_answer_the_waiting_request() {
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":7,"result":{}{}}}"#,
        "[".repeat(300),
        "]".repeat(300)
    );
    let cases: Vec<(&str, Value)> = vec![
        (
            "over_the_size_limit",
            json!({"lines": [r#"{"jsonrpc":"2.0","id":7,"result":{"text":"<PAD>"}}"#], "pad": 4096}),
        ),
        (
            "not_utf8",
            json!({"hex": [hex(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"text\":\"\xff\xfe\"}}")]}),
        ),
        ("nested_deeper_than_the_limit", json!({"lines": [deep]})),
        (
            "holds_nan",
            json!({"lines": [r#"{"jsonrpc":"2.0","id":7,"result":{"x":NaN}}"#]}),
        ),
    ];
    for (name, mut params) in cases {
        let mut p = Proxy::run(
            &["--sandbox", "off", "--max-message-size", "2KiB"],
            &[&test_server()],
        );
        p.initialize("2025-06-18");
        p.send(r#"{"jsonrpc":"2.0","id":7,"method":"never"}"#);
        params["respond"] = json!(false);
        emit(&mut p, 8, params);
        let r = p.recv();
        assert_eq!(r["id"], 7, "{name}: {r}");
        assert_eq!(r["error"]["code"], -32011, "{name}: {r}");
        assert!(
            r["error"]["message"].as_str().unwrap().contains("withheld"),
            "{name}: {r}"
        );
        // The session goes on.
        p.send(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#);
        assert_eq!(p.recv()["id"], 9, "{name}");
        p.close_stdin();
        assert_eq!(p.exit_code(), 0, "{name}");
    }
}

/// Item 9: an answer whose id cannot be read at all fails the requests the server held, and
/// later answers to them are dropped: each gets exactly one answer.
#[test]
fn an_answer_without_a_readable_id_fails_what_the_server_held() {
    let mut p = Proxy::run(&["--sandbox", "off"], &[&test_server()]);
    p.initialize("2025-06-18");
    p.send(r#"{"jsonrpc":"2.0","id":5,"method":"slow","params":{"ms":300}}"#);
    emit(
        &mut p,
        6,
        json!({"respond": false, "lines": [r#"{"jsonrpc":"2.0","result":{},"id":[5]}"#]}),
    );
    let got = p.recv_by_id(2);
    for id in ["5", "6"] {
        assert_eq!(got[id]["error"]["code"], -32011, "{id}: {got:?}");
    }
    // The late real answer to 5 is dropped, not delivered twice.
    p.expect_silence(600);
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);
}

/// Item 3: only the host speaks for the host. A server request carrying 2026-07-28 `_meta`
/// client capabilities without roots must not make rootfence believe the host has none (and
/// fall back to the wider operator roots).
#[test]
fn a_server_cannot_forge_the_hosts_capabilities() {
    let t = common::tempdir();
    let base = t.path().canonicalize().unwrap();
    std::fs::create_dir_all(base.join("host")).unwrap();
    std::fs::write(base.join("wide.txt"), "operator root only").unwrap();
    let mut p = Proxy::run(
        &["--sandbox", "off", "--root", base.to_str().unwrap()],
        &[&test_server()],
    );
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
    });
    // The server answers the host's first request with a request of its own that claims,
    // in the host's `_meta` keys, that the host has no roots.
    let forged = json!({"jsonrpc":"2.0","id":"forge","method":"ping","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    p.send_json(&json!({"jsonrpc":"2.0","id":1,"method":"emit","params":{
        "lines": [forged.to_string()], "_meta": meta}}));
    let mut saw = Vec::new();
    for _ in 0..2 {
        saw.push(p.recv());
    }
    // A read outside the host's roots (which rootfence does not know yet) is not allowed
    // under the operator root: rootfence asks the host instead.
    p.send_json(
        &json!({"jsonrpc":"2.0","id":2,"method":"resources/read","params":{
        "uri": format!("file://{}", base.join("wide.txt").display()), "_meta": meta}}),
    );
    let r = p.recv();
    assert_eq!(
        r["result"]["resultType"], "input_required",
        "{r} after {saw:?}"
    );
    p.close_stdin();
    p.wait();
}

/// Item 10: a server that floods requests rootfence answers itself, and never reads its
/// input, cannot grow rootfence's memory: the answers wait in a bounded queue, and a server
/// that lets it fill is stopped. (Measured: 17 MiB peak; bound 96 MiB.)
#[test]
fn a_server_that_stops_reading_cannot_grow_rootfences_memory() {
    let t = common::tempdir();
    let mut p = Proxy::run(
        &["--sandbox", "off", "--root", t.path().to_str().unwrap()],
        &[&test_server()],
    );
    p.initialize("2025-06-18");
    // 200,000 roots/list requests (rootfence answers each: the host has no roots), then the
    // server stops reading.
    let ask = r#"{"jsonrpc":"2.0","id":"r","method":"roots/list"}"#;
    emit(
        &mut p,
        1,
        json!({"lines": [ask], "repeat": 200_000, "respond": false, "block": true}),
    );
    let mut peak = 0;
    let ended = loop {
        if let Ok(Some(status)) = p.child.try_wait() {
            break status;
        }
        peak = peak.max(peak_rss_mib(&p).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(50));
        assert!(peak < 96, "rootfence grew to {peak} MiB");
    };
    let _ = ended;
    eprintln!("peak RSS {peak} MiB");
    assert!(
        p.stderr().contains("does not read its input"),
        "{}",
        p.stderr()
    );
}

/// Item 10: a host that floods `notifications/roots/list_changed` and never reads rootfence's
/// output: rootfence asks it once at a time, so nothing piles up. (Measured: 18 MiB peak;
/// bound 64 MiB.)
#[test]
fn a_list_changed_storm_from_a_host_that_does_not_read_stays_bounded() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let t = common::tempdir();
    // Its stdout is a pipe nobody reads.
    let mut child = Command::new(common::rootfence())
        .args([
            "run",
            "--sandbox",
            "off",
            "--root",
            t.path().to_str().unwrap(),
            "--",
        ])
        .arg(test_server())
        .env("XDG_STATE_HOME", t.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},
        "clientInfo":{"name":"storm","version":"0"}}});
    writeln!(stdin, "{init}").unwrap();
    let storm =
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"}\n".repeat(1000);
    for _ in 0..200 {
        stdin.write_all(storm.as_bytes()).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let peak: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap()
        / 1024;
    eprintln!("peak RSS {peak} MiB");
    assert!(peak < 64, "rootfence grew to {peak} MiB");
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
}

/// Item 10: messages held while the roots are unknown are capped: past the cap (1,024
/// messages or 64 MiB), a request is answered at once. (Measured: 55 MiB peak with 3,000
/// 16 KiB reads; bound 160 MiB.)
#[test]
fn messages_held_while_the_roots_are_unknown_are_capped() {
    let t = common::tempdir();
    let policy = t.path().join("p.toml");
    std::fs::write(&policy, "version = 1\n[roots]\nlist_timeout_ms = 60000\n").unwrap();
    let mut p = Proxy::run(
        &["--sandbox", "off", "--policy", policy.to_str().unwrap()],
        &[&test_server()],
    );
    // A host that declares roots and answers rootfence's question only after sending 3,000
    // reads: they wait for the answer.
    p.send_json(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{"roots":{}},
        "clientInfo":{"name":"slow","version":"0"}}}),
    );
    let ask = p.recv();
    assert_eq!(ask["method"], "roots/list", "{ask}");
    let pad = "x".repeat(16 * 1024);
    for n in 0..3000u64 {
        p.send_json(
            &json!({"jsonrpc":"2.0","id":1000 + n,"method":"resources/read","params":{
            "uri": format!("file://{}/a.txt", t.path().display()), "pad": pad}}),
        );
    }
    p.send_json(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"roots":[
        {"uri": format!("file://{}", t.path().display())}]}}));
    // Every request is answered once: past the cap at once ("send this request again"),
    // the held ones when the answer comes.
    let mut answered = std::collections::HashSet::new();
    let mut retry = 0;
    while answered.len() < 3000 {
        let v = p.recv();
        if v.get("method").is_some() || v["id"] == 0 {
            continue;
        }
        if v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("send this request again"))
        {
            retry += 1;
        }
        assert!(answered.insert(v["id"].to_string()), "twice: {v}");
    }
    assert!(retry >= 3000 - 1024, "{retry} answered at once");
    let peak = peak_rss_mib(&p).expect("rootfence is still running");
    eprintln!("peak RSS {peak} MiB");
    assert!(peak < 160, "rootfence grew to {peak} MiB");
    p.close_stdin();
    p.wait();
}
