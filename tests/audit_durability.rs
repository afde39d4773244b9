//! Issue 14, group commit: what the policy promises about when records reach the disk,
//! checked from outside through the real binary, run as a host runs it (default policy and
//! sandbox, no `--root`).
//!
//! - A denial's record is in the log file before the denial reaches the host (with the
//!   default `fsync = "denials"`, synced too; that part is not observable from here).
//! - An allowed decision's record reaches the file within a bounded delay without anything
//!   waiting for it (documented: 50 ms; asserted with a wide margin, since this is not a
//!   timing test).

mod common;

use std::time::{Duration, Instant};

use common::{Proxy, test_server};
use serde_json::{Value, json};

fn records(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn a_denials_record_is_on_disk_before_the_denial_reaches_the_host() {
    let t = common::tempdir();
    let log = t.path().join("audit.jsonl");
    let server = test_server();
    let mut p = Proxy::run(&["--audit-log", log.to_str().unwrap()], &[&server]);
    p.initialize("2025-06-18");
    for id in 1..=50 {
        let uri = format!("file:///etc/passwd-{id}");
        p.send_json(
            &json!({"jsonrpc":"2.0","id":id,"method":"resources/read","params":{"uri":uri}}),
        );
        let answer = p.recv();
        assert_eq!(answer["id"], id, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("denied")),
            "{answer}"
        );
        // Read the file the moment the denial arrived: its record is already there.
        let found = records(&log).iter().any(|r| {
            r["event"] == "decision" && r["decision"] == "deny" && r["uri"] == uri.as_str()
        });
        assert!(
            found,
            "the denial of {uri} reached the host before its record reached the log"
        );
    }
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);
}

#[test]
fn allowed_records_reach_the_disk_within_a_bounded_delay_without_anyone_waiting() {
    let t = common::tempdir();
    let log = t.path().join("audit.jsonl");
    let server = test_server();
    let mut p = Proxy::run(&["--audit-log", log.to_str().unwrap()], &[&server]);
    p.initialize("2025-06-18");
    // A non-file: scheme the default policy allows: an allowed decision, answered by the server.
    let raw = json!({"contents": [{"uri": "https://example.com/a", "text": "a"}]}).to_string();
    p.send_json(&json!({"jsonrpc":"2.0","id":1,"method":"resources/read",
        "params":{"uri":"https://example.com/a","_rawResult": raw}}));
    let answer = p.recv();
    assert!(answer.get("result").is_some(), "{answer}");
    let since = Instant::now();
    loop {
        let allowed = records(&log)
            .iter()
            .any(|r| r["event"] == "decision" && r["decision"] == "allow");
        if allowed {
            break;
        }
        // The writer's delay is 50 ms; this bound only tells "never" (the bug: allowed
        // records waiting for the session's end) from a loaded machine.
        assert!(
            since.elapsed() < common::PATIENCE,
            "the allowed decision never reached the log while the session was open"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    eprintln!(
        "allowed record on disk {:?} after the answer",
        since.elapsed()
    );
    p.close_stdin();
    assert_eq!(p.exit_code(), 0);
}
