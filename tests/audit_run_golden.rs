//! Issue 5's end-to-end golden test: a scripted session through the real `rootfence run`
//! produces exactly the expected audit records (volatile fields masked: times, session id,
//! hashes, pid, version, temporary paths). `ROOTFENCE_BLESS=1` rewrites the golden file.

mod common;

use common::{Proxy, tempdir, test_server};
use serde_json::{Value, json};

const GOLDEN: &str = "tests/snapshots/audit_run_golden.jsonl";

/// Replaces what differs from run to run, recursively.
fn mask(v: &mut Value, root: &str, server: &str) {
    match v {
        Value::String(s) => {
            *s = s.replace(root, "<root>").replace(server, "<test_server>");
        }
        Value::Array(items) => items.iter_mut().for_each(|i| mask(i, root, server)),
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                match k.as_str() {
                    "ts" | "session" | "prev" | "pid" | "rootfence_version" | "cwd" | "sha256"
                    | "landlock_abi" => *val = json!(format!("<{k}>")),
                    _ => mask(val, root, server),
                }
            }
        }
        _ => {}
    }
}

#[test]
fn a_real_session_produces_exactly_the_golden_records() {
    let t = tempdir();
    let root = t.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("a.txt"), "a").unwrap();
    std::fs::write(root.join(".env"), "TOKEN=x").unwrap();
    std::fs::write(root.join("b.txt"), "b").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub").join("c.txt"), "c").unwrap();
    let root = root.canonicalize().unwrap();
    let log = t.path().join("audit.jsonl");
    let server = test_server();
    let mut p = Proxy::run(
        &[
            "--sandbox",
            "off",
            "--root",
            root.to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
        ],
        &[&server],
    );
    p.initialize("2025-06-18");
    let file = |name: &str| format!("file://{}/{name}", root.display());
    for (id, uri) in [
        (1, file("a.txt")),
        (2, file(".env")),
        (3, "file:///etc/passwd".into()),
    ] {
        p.send_json(
            &json!({"jsonrpc":"2.0","id":id,"method":"resources/read","params":{"uri":uri}}),
        );
        p.recv();
    }
    // A read whose result names the URI checked on the way in (one decision, not two), plus
    // another file inside and one outside (each its own decision).
    let contents = json!({"contents": [
        {"uri": file("a.txt"), "text": "a"},
        {"uri": file("b.txt"), "text": "b"},
        {"uri": "file:///etc/passwd", "text": "x"},
    ]});
    p.send_json(&json!({"jsonrpc":"2.0","id":4,"method":"resources/read",
        "params":{"uri": file("a.txt"), "_rawResult": contents.to_string()}}));
    let read = p.recv();
    assert_eq!(
        read["result"]["contents"].as_array().map(Vec::len),
        Some(2),
        "{read}"
    );
    // A list page: its allowed entries in one decision_summary, each denial on its own.
    let page = json!({"resources": [
        {"uri": file("a.txt"), "name": "a"},
        {"uri": file("b.txt"), "name": "b"},
        {"uri": file("sub/c.txt"), "name": "c"},
        {"uri": file(".env"), "name": "env"},
        {"uri": "file:///etc/shadow", "name": "shadow"},
        {"uri": "https://example.com/x", "name": "web"},
    ]});
    p.send_json(&json!({"jsonrpc":"2.0","id":5,"method":"resources/list",
        "params":{"_rawResult": page.to_string()}}));
    let list = p.recv();
    assert_eq!(
        list["result"]["resources"].as_array().map(Vec::len),
        Some(4),
        "{list}"
    );
    p.send("this line is not JSON");
    p.recv();
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);

    let root_text = root.display().to_string();
    let mut records: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| {
            let mut v: Value = serde_json::from_str(line).unwrap();
            mask(&mut v, &root_text, &server);
            v
        })
        .collect();
    // `server_start` is written once the server process has started, which happens alongside
    // the host's first messages: its place among them varies from run to run (the chain and
    // the sequence numbers are checked on the real log below), so it is compared second.
    if let Some(i) = records.iter().position(|r| r["event"] == "server_start") {
        let r = records.remove(i);
        records.insert(1, r);
    }
    for r in &mut records {
        r["seq"] = json!("<seq>");
    }
    let records: Vec<String> = records.iter().map(Value::to_string).collect();
    let got = records.join("\n") + "\n";
    if std::env::var_os("ROOTFENCE_BLESS").is_some() {
        std::fs::write(GOLDEN, &got).unwrap();
    }
    let want = std::fs::read_to_string(GOLDEN)
        .unwrap_or_else(|_| panic!("{GOLDEN} is missing: run with ROOTFENCE_BLESS=1 to create it"));
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(
            g,
            w,
            "record {} differs (ROOTFENCE_BLESS=1 rewrites the golden file)",
            i + 1
        );
    }
    assert_eq!(
        got.lines().count(),
        want.lines().count(),
        "number of records:\n{got}"
    );

    // And the real log (unmasked) verifies.
    let out = std::process::Command::new(common::rootfence())
        .args(["audit", "verify", log.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
