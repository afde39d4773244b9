//! End-to-end tests of how `rootfence run` learns and applies the roots (issue 6, and the
//! sandbox-cannot-widen record of issue 7), through the real binary with the scripted test
//! server. The attack corpus against a hostile server lives in the other `enforce_*` files.

mod common;

use common::{Proxy, tempdir, test_server};
use serde_json::{Value, json};

fn uri(p: &std::path::Path) -> String {
    format!("file://{}", p.canonicalize().unwrap().display())
}

fn audit_events(path: &std::path::Path, event: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == event)
        .collect()
}

/// Initializes with the roots capability and answers rootfence's own `roots/list`.
fn init_with_roots(p: &mut Proxy, roots: Value) {
    p.send_json(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},
        "clientInfo":{"name":"test-host","version":"0"}}}),
    );
    // rootfence asks the host itself, before the initialize answer.
    let ask = p.recv();
    assert_eq!(
        ask["method"], "roots/list",
        "rootfence asks the host itself: {ask}"
    );
    assert!(ask["id"].as_str().unwrap().starts_with("rootfence-"));
    p.send_json(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"roots":roots}}));
    assert_eq!(p.recv()["id"], 0);
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
}

fn read(p: &mut Proxy, id: u64, uri: &str) -> Value {
    p.send_json(&json!({"jsonrpc":"2.0","id":id,"method":"resources/read","params":{"uri":uri}}));
    p.recv()
}

#[test]
fn host_roots_are_learnt_and_narrowed_by_the_operator_roots() {
    let t = tempdir();
    let ws = t.path().join("ws");
    std::fs::create_dir_all(ws.join("proj")).unwrap();
    std::fs::create_dir_all(t.path().join("other")).unwrap();
    std::fs::write(ws.join("proj/a.txt"), "a").unwrap();
    std::fs::write(ws.join("b.txt"), "b").unwrap();
    let log = t.path().join("audit.jsonl");
    let proj = ws.join("proj");
    let mut p = Proxy::run(
        &[
            "--sandbox",
            "off",
            "--audit-log",
            log.to_str().unwrap(),
            "--root",
            proj.to_str().unwrap(),
        ],
        &[&test_server()],
    );
    // The host declares the whole workspace and an unrelated directory: the workspace is
    // narrowed to the operator root inside it, the other one is dropped.
    init_with_roots(
        &mut p,
        json!([{"uri": uri(&ws), "name": "ws"}, {"uri": uri(&t.path().join("other"))}]),
    );
    // Inside the narrowed root: the test server does not serve reads, but the request passes.
    let inside = read(&mut p, 1, &uri(&proj.join("a.txt")));
    assert_eq!(
        inside["error"]["code"], -32601,
        "forwarded to the server: {inside}"
    );
    // In the host's root but outside the operator's: denied.
    let outside = read(&mut p, 2, &uri(&ws.join("b.txt")));
    assert_eq!(outside["error"]["code"], -32010, "{outside}");
    assert_eq!(outside["error"]["data"]["reason"], "outside_roots");

    // The server asks for the roots: the host's answer is replaced by the effective roots.
    p.send(r#"{"jsonrpc":"2.0","id":3,"method":"ask_host","params":{"method":"roots/list","id":"s1"}}"#);
    let ask = p.recv();
    assert_eq!(ask["method"], "roots/list");
    assert_eq!(ask["id"], "s1", "the server's own request reaches the host");
    p.send_json(&json!({"jsonrpc":"2.0","id":"s1","result":{"roots":[{"uri": uri(&ws)}]}}));
    let answered = p.recv();
    assert_eq!(
        answered["result"]["host_response"]["result"]["roots"],
        json!([{"uri": uri(&proj)}]),
        "the server only ever sees the effective roots: {answered}"
    );
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);

    let updates = audit_events(&log, "roots_update");
    let first = updates
        .iter()
        .find(|u| u["received"].as_array().is_some_and(|r| r.len() == 2))
        .unwrap();
    assert_eq!(first["effective"], json!([uri(&proj)]));
    assert_eq!(first["narrowed"][0]["uri"], uri(&ws));
    assert_eq!(first["dropped"][0]["reason"], "outside_operator_roots");
}

#[test]
fn server_roots_request_without_host_roots_gets_operator_roots_or_method_not_found() {
    let t = tempdir();
    // No roots capability and no operator roots: -32601, as the spec says.
    let mut p = Proxy::run(&["--sandbox", "off"], &[&test_server()]);
    p.initialize("2025-06-18");
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"ask_host","params":{"method":"roots/list"}}"#);
    let r = p.recv();
    assert_eq!(r["result"]["host_response"]["error"]["code"], -32601, "{r}");

    // With operator roots, rootfence answers with them itself.
    let mut p = Proxy::run(
        &["--sandbox", "off", "--root", t.path().to_str().unwrap()],
        &[&test_server()],
    );
    p.initialize("2025-06-18");
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"ask_host","params":{"method":"roots/list"}}"#);
    let r = p.recv();
    assert_eq!(
        r["result"]["host_response"]["result"]["roots"],
        json!([{"uri": uri(t.path())}]),
        "{r}"
    );
}

#[test]
fn unknown_roots_deny_file_uris_and_never_allow() {
    // The host has roots but never answers rootfence's request: file: waits, then denies.
    let t = tempdir();
    std::fs::write(t.path().join("a.txt"), "a").unwrap();
    let policy = t.path().join("p.toml");
    std::fs::write(
        &policy,
        "version = 1\n[roots]\nlist_timeout_ms = 300\non_timeout = \"deny\"\n",
    )
    .unwrap();
    let mut p = Proxy::run(
        &["--sandbox", "off", "--policy", policy.to_str().unwrap()],
        &[&test_server()],
    );
    p.send_json(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"h","version":"0"}}}));
    assert_eq!(p.recv()["method"], "roots/list");
    // Not answered. A read waits at most list_timeout_ms, then is denied.
    let started = std::time::Instant::now();
    p.send_json(&json!({"jsonrpc":"2.0","id":1,"method":"resources/read",
        "params":{"uri": uri(&t.path().join("a.txt"))}}));
    let r = loop {
        let v = p.recv();
        if v["id"] == 1 {
            break v;
        }
    };
    assert_eq!(r["error"]["code"], -32010, "{r}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn stateless_host_is_asked_for_roots_with_input_required() {
    let t = tempdir();
    std::fs::write(t.path().join("a.txt"), "a").unwrap();
    let log = t.path().join("server.log");
    let mut p = Proxy::run(
        &["--sandbox", "off"],
        &[&test_server(), "--log", log.to_str().unwrap()],
    );
    let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities":{"roots":{}}});
    p.send_json(&json!({"jsonrpc":"2.0","id":1,"method":"resources/read",
        "params":{"uri": uri(&t.path().join("a.txt")), "_meta": meta}}));
    let r = p.recv();
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let requests = r["result"]["inputRequests"].as_object().unwrap();
    let (key, request) = requests.iter().next().unwrap();
    assert!(key.starts_with("io.rootfence/roots-"), "{key}");
    assert_eq!(request["method"], "roots/list");

    // The retry carries the answer; rootfence takes it out before the server sees it.
    p.send_json(&json!({"jsonrpc":"2.0","id":2,"method":"resources/read",
        "params":{"uri": uri(&t.path().join("a.txt")), "_meta": meta,
                  "inputResponses": {key.as_str(): {"roots":[{"uri": uri(t.path())}]}}}}));
    let r = p.recv();
    assert_eq!(r["id"], 2);
    assert_eq!(
        r["error"]["code"], -32601,
        "forwarded to the server (which has no reads): {r}"
    );
    // A URI outside the roots is denied now that they are known.
    let r = read(&mut p, 3, "file:///etc/passwd");
    assert_eq!(r["error"]["data"]["reason"], "outside_roots", "{r}");
    p.close_stdin();
    p.wait();
    let seen = std::fs::read_to_string(&log).unwrap();
    assert!(
        !seen.contains("inputResponses"),
        "the server saw rootfence's answer: {seen}"
    );
    assert!(!seen.contains("/etc/passwd"));
}

#[test]
fn serve_stance_answers_reads_from_rootfences_own_read() {
    let t = tempdir();
    std::fs::write(t.path().join("a.txt"), "served by rootfence").unwrap();
    std::fs::write(t.path().join("b.bin"), [0u8, 159, 146, 150]).unwrap();
    let policy = t.path().join("p.toml");
    std::fs::write(&policy, "version = 1\n[resources]\nread = \"serve\"\n").unwrap();
    let log = t.path().join("server.log");
    let mut p = Proxy::run(
        &[
            "--sandbox",
            "off",
            "--policy",
            policy.to_str().unwrap(),
            "--root",
            t.path().to_str().unwrap(),
        ],
        &[&test_server(), "--log", log.to_str().unwrap()],
    );
    p.initialize("2025-06-18");
    let r = read(&mut p, 1, &uri(&t.path().join("a.txt")));
    assert_eq!(
        r["result"]["contents"][0]["text"], "served by rootfence",
        "{r}"
    );
    assert!(
        r["result"].get("resultType").is_none(),
        "not before 2026-07-28"
    );
    let r = read(&mut p, 2, &uri(&t.path().join("b.bin")));
    assert_eq!(r["result"]["contents"][0]["blob"], "AJ+Slg==", "{r}");
    let r = read(&mut p, 3, &format!("{}/missing.txt", uri(t.path())));
    assert_eq!(r["error"]["code"], -32002, "{r}");
    p.close_stdin();
    p.wait();
    assert!(
        !std::fs::read_to_string(&log)
            .unwrap()
            .contains("resources/read"),
        "the server never saw a read"
    );

    // 2026-07-28: the result carries resultType, a missing resource is -32602.
    let mut p = Proxy::run(
        &[
            "--sandbox",
            "off",
            "--policy",
            policy.to_str().unwrap(),
            "--root",
            t.path().to_str().unwrap(),
        ],
        &[&test_server()],
    );
    let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities":{}});
    p.send_json(&json!({"jsonrpc":"2.0","id":1,"method":"resources/read",
        "params":{"uri": uri(&t.path().join("a.txt")), "_meta": meta}}));
    let r = p.recv();
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    p.send_json(&json!({"jsonrpc":"2.0","id":2,"method":"resources/read",
        "params":{"uri": format!("{}/missing.txt", uri(t.path())), "_meta": meta}}));
    assert_eq!(p.recv()["error"]["code"], -32602);
}

#[test]
fn an_audit_log_that_cannot_be_written_stops_the_session() {
    let t = tempdir();
    // A directory where the log file should be: it cannot be opened for appending.
    let log = t.path().join("audit.jsonl");
    std::fs::create_dir(&log).unwrap();
    let mut p = Proxy::run(
        &["--sandbox", "off", "--audit-log", log.to_str().unwrap()],
        &[&test_server()],
    );
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    let r = p.recv();
    assert_eq!(
        r["error"]["code"], -32000,
        "nothing is relayed unaudited: {r}"
    );
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("audit log"),
        "{r}"
    );
    assert_eq!(p.exit_code(), 2);
    assert!(p.stderr().contains("audit log"), "{}", p.stderr());
}

#[test]
fn a_link_inside_the_root_cannot_rename_a_denied_file() {
    let t = tempdir();
    let root = t.path().join("proj");
    std::fs::create_dir_all(root.join(".aws")).unwrap();
    std::fs::write(root.join(".env"), "TOKEN=x").unwrap();
    std::fs::write(root.join(".aws/credentials"), "key").unwrap();
    std::fs::write(root.join("plain.txt"), "ok").unwrap();
    std::os::unix::fs::symlink(".env", root.join("notes.txt")).unwrap();
    std::os::unix::fs::symlink(".aws", root.join("cfg")).unwrap();
    std::os::unix::fs::symlink("plain.txt", root.join("alias.txt")).unwrap();
    let mut p = Proxy::run(
        &["--sandbox", "off", "--root", root.to_str().unwrap()],
        &[&test_server()],
    );
    p.initialize("2025-06-18");
    for (i, (name, denied)) in [
        ("notes.txt", true),       // final component links to .env
        ("cfg/credentials", true), // an intermediate directory links into .aws
        ("cfg/new-file", true),    // not there yet, but it would be created inside .aws
        ("alias.txt", false),      // a link to an allowed file stays allowed
    ]
    .into_iter()
    .enumerate()
    {
        let r = read(&mut p, i as u64 + 1, &format!("{}/{name}", uri(&root)));
        if denied {
            assert_eq!(r["error"]["code"], -32010, "{name}: {r}");
            assert_eq!(
                r["error"]["data"]["reason"], "policy_deny_via_symlink",
                "{name}: {r}"
            );
        } else {
            assert_eq!(r["error"]["code"], -32601, "{name} is forwarded: {r}");
        }
    }
}

#[test]
fn serde_private_marker_keys_never_reach_the_host_plain_or_escaped() {
    // With serde_json's arbitrary_precision and raw_value features, `Value` reads an object
    // keyed `$serde_json::private::RawValue` as the JSON in its string, while the host sees an
    // object. Written plainly, rootfence forwards the value it checked (the URI as a string);
    // spelled with escapes the key once slipped past that byte search and the original bytes
    // went on, so what rootfence checked was not what the host got: such keys are now refused
    // when the strict scan decodes them, and the response is withheld with an error.
    let t = tempdir();
    std::fs::write(t.path().join("a.txt"), "a").unwrap();
    let mut p = Proxy::run(
        &["--sandbox", "off", "--root", t.path().to_str().unwrap()],
        &[&test_server()],
    );
    p.initialize("2025-06-18");
    let inside = uri(&t.path().join("a.txt"));
    p.send_json(&json!({"jsonrpc":"2.0","id":"plain","method":"resources/read",
        "params":{"uri": inside, "_rawResult": format!(
            r#"{{"contents":[{{"uri":{{"$serde_json::private::RawValue":"\"{inside}\""}},"text":"a"}}]}}"#
        )}}));
    let line = p.recv_line();
    assert!(!line.contains("serde_json::private"), "{line}");
    assert!(
        line.contains(&format!(r#""uri":"{inside}""#)),
        "the host sees the URI rootfence checked, as a string: {line}"
    );
    for (i, key) in [
        "$\\u0073erde_json::private::RawValue",
        "\\u0024serde_json\\u003a:private::RawValue",
    ]
    .iter()
    .enumerate()
    {
        let raw = format!(r#"{{"contents":[{{"uri":{{"{key}":"\"{inside}\""}},"text":"a"}}]}}"#);
        p.send_json(&json!({"jsonrpc":"2.0","id":i,"method":"resources/read",
            "params":{"uri": inside, "_rawResult": raw}}));
        // The raw line: this test's own serde_json has the same features, so parsing it
        // could hide a difference.
        let line = p.recv_line();
        assert!(!line.contains(r#""result""#), "{key}: {line}");
        assert!(
            line.contains(r#""code":-32011"#) && line.contains("reserved key"),
            "{key}: the response is withheld with an error: {line}"
        );
    }
}
