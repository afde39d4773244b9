//! Re-judged reads (issue 28, item 8), written as the attack: a slow server answers a
//! `resources/read` after the host removed the root the file is in. The answer is judged
//! under the roots in force when it is delivered, so the removed root's content never
//! reaches the host; with the roots unchanged, the same slow answer arrives whole.

mod common;

use std::path::Path;

use common::{Proxy, test_server};
use serde_json::{Value, json};

fn uri(p: &Path) -> String {
    format!("file://{}", p.to_str().unwrap())
}

struct Host {
    p: Proxy,
    roots: Vec<String>,
}

impl Host {
    fn until(&mut self, id: &Value) -> Value {
        loop {
            let v = self.p.recv();
            if v["method"] == "roots/list" && v.get("id").is_some() {
                let roots: Vec<Value> = self.roots.iter().map(|u| json!({"uri": u})).collect();
                self.p
                    .send_json(&json!({"jsonrpc":"2.0","id":v["id"],"result":{"roots":roots}}));
                continue;
            }
            if &v["id"] == id && v.get("method").is_none() {
                return v;
            }
        }
    }
}

/// Starts a session with roots `a` and `b`, asks for `a/secret.txt` from a server that
/// answers after 1.5 s, runs `meanwhile`, and returns the read's answer.
fn slow_read(meanwhile: impl FnOnce(&mut Host, &Path, &Path)) -> (Value, String) {
    let t = common::tempdir();
    let base = t.path().canonicalize().unwrap();
    let (a, b) = (base.join("a"), base.join("b"));
    for d in [&a, &b] {
        std::fs::create_dir_all(d).unwrap();
    }
    let file = a.join("secret.txt");
    std::fs::write(&file, "the content of a").unwrap();
    let mut h = Host {
        p: Proxy::run(&["--restart-grace", "5s"], &[&test_server()]),
        roots: vec![uri(&a), uri(&b)],
    };
    h.p.send_json(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},
        "clientInfo":{"name":"narrowing-host","version":"0"}}}),
    );
    assert!(h.until(&json!(0)).get("result").is_some());
    h.p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    // Settle the roots first (the server reads nothing before).
    h.p.send(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#);
    h.until(&json!("p"));

    let raw = json!({"contents": [{"uri": uri(&file), "mimeType": "text/plain",
        "text": "the content of a"}]})
    .to_string();
    h.p.send_json(
        &json!({"jsonrpc":"2.0","id":"read","method":"resources/read",
        "params":{"uri": uri(&file), "_rawResult": raw, "_delayMs": 1500}}),
    );
    meanwhile(&mut h, &a, &b);
    let answer = h.until(&json!("read"));
    h.p.close_stdin();
    h.p.wait();
    (answer, h.p.stderr())
}

#[test]
fn a_slow_read_answered_after_its_root_was_removed_brings_no_content() {
    let (answer, stderr) = slow_read(|h, _a, b| {
        // The host drops root `a` while the read is in flight.
        h.roots = vec![uri(b)];
        h.p.send(r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#);
        h.p.send(r#"{"jsonrpc":"2.0","id":"q","method":"ping"}"#);
        h.until(&json!("q"));
    });
    assert!(
        !answer.to_string().contains("the content of a"),
        "the removed root's content arrived: {answer}; stderr:\n{stderr}"
    );
    assert_eq!(
        answer["error"]["data"]["reason"], "outside_roots",
        "{answer}"
    );
}

#[test]
fn a_slow_read_under_unchanged_roots_arrives_whole() {
    let (answer, stderr) = slow_read(|_, _, _| {});
    assert_eq!(
        answer["result"]["contents"][0]["text"], "the content of a",
        "{answer}; stderr:\n{stderr}"
    );
}
