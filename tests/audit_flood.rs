//! Issue 13, item 11: a server that floods rootfence with bad lines must not fill the disk
//! through the audit log. Through the real binary, as a host starts it (default policy and
//! sandbox, no `--root`), with a hostile server of our own (`tests/fixtures/audit/
//! flood_server.py`) writing 2-byte lines that are not JSON while the host keeps sending
//! requests.
//!
//! The bound asserted: the flood costs the log at most one full `protocol_error` record and
//! one `protocol_error_repeated` record per second (per kind and direction), however many
//! lines come; every line is still counted, and every host request is answered.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Bytes of `x\n` lines the server writes: 2^17 bad lines.
const FLOOD_BYTES: u64 = 1 << 18;

/// Requests the host sends while the flood runs.
const REQUESTS: u64 = 40;

/// rootfence's peak RSS bound during a flood.
const RSS_BOUND_KIB: u64 = 64 * 1024;

/// What the host saw and what rootfence left behind after a flood.
struct Flooded {
    _dir: tempfile::TempDir,
    log: std::path::PathBuf,
    elapsed: Duration,
    done: String,
    stderr_bytes: u64,
    peak_rss_kib: u64,
}

/// Runs a session, as a host runs it, against the flood server (`line`: see its docs)
/// flooding `bytes` while the host sends [`REQUESTS`] pings, each of which must be answered;
/// rootfence's peak RSS stays under [`RSS_BOUND_KIB`].
fn flood(line: &str, bytes: u64) -> Flooded {
    let t = common::tempdir();
    let log = t.path().join("audit.jsonl");
    let server = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/audit/flood_server.py"
    );
    let mut child = Command::new(common::rootfence())
        .args(["run", "--audit-log"])
        .arg(&log)
        .args([
            "--",
            "python3",
            server,
            "--bytes",
            &bytes.to_string(),
            "--line",
            line,
        ])
        .env("XDG_STATE_HOME", t.path().join("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rootfence starts");
    // rootfence's stderr (a warning per bad line, at the default level) is counted, not kept.
    let mut err = child.stderr.take().unwrap();
    let stderr_bytes = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut n = 0u64;
        while let Ok(k) = err.read(&mut buf) {
            if k == 0 {
                break;
            }
            n += k as u64;
        }
        n
    });
    let (tx, rx) = channel::<Value>();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("rootfence wrote non-JSON {line:?}: {e}"));
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    // Owned by the closure: dropping it closes rootfence's stdin, as a host ends a session.
    let mut send = move |v: Value| {
        stdin.write_all(format!("{v}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    let patience = Duration::from_secs(60);
    let started = Instant::now();
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test-host", "version": "0"}}}),
    );
    let init = rx.recv_timeout(patience).expect("initialize answered");
    assert_eq!(init["id"], 0, "{init}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let mut answered = std::collections::BTreeSet::new();
    let mut done = None;
    for id in 1..=REQUESTS {
        send(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        std::thread::sleep(Duration::from_millis(5));
    }
    while answered.len() < REQUESTS as usize || done.is_none() {
        let v = rx
            .recv_timeout(patience)
            .unwrap_or_else(|_| panic!("stuck: answered {answered:?}, flood done: {done:?}"));
        if let Some(id) = v["id"].as_u64() {
            assert!(v.get("result").is_some(), "{v}");
            assert!(answered.insert(id), "answered twice: {v}");
        } else if v["method"] == "notifications/message" {
            done = v["params"]["data"].as_str().map(str::to_owned);
        }
    }
    let peak_rss_kib = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0);
    drop(send);
    let status = child.wait().unwrap();
    let elapsed = started.elapsed();
    assert!(status.success(), "{status:?}");
    let stderr_bytes = stderr_bytes.join().unwrap();

    assert!(
        peak_rss_kib <= RSS_BOUND_KIB,
        "rootfence's peak RSS {peak_rss_kib} KiB"
    );
    Flooded {
        _dir: t,
        log,
        elapsed,
        done: done.unwrap_or_default(),
        stderr_bytes,
        peak_rss_kib,
    }
}

#[test]
fn a_server_flooding_bad_lines_cannot_fill_the_disk_through_the_audit_log() {
    let f = flood("x", FLOOD_BYTES);
    let (log, elapsed, stderr_bytes) = (&f.log, f.elapsed, f.stderr_bytes);
    let lines_sent = FLOOD_BYTES / 2;
    assert_eq!(f.done, format!("flood done: {lines_sent} lines"));
    let text = std::fs::read_to_string(log).unwrap();
    let log_bytes = text.len() as u64;
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let errors: Vec<&Value> = records
        .iter()
        .filter(|r| {
            matches!(
                r["event"].as_str(),
                Some("protocol_error" | "protocol_error_repeated")
            )
        })
        .collect();
    // Every bad line is counted: in full or in a repeated record.
    let counted: u64 = errors
        .iter()
        .map(|r| r["count"].as_u64().unwrap_or(1))
        .sum();
    assert_eq!(counted, lines_sent, "every bad line is accounted for");
    let end = records.last().unwrap();
    assert_eq!(end["event"], "session_end", "{end}");
    assert_eq!(end["counts"]["protocol_errors"], lines_sent, "{end}");
    // The bound: two records per second of flood (rounded up), plus the first.
    let seconds = elapsed.as_secs() + 1;
    assert!(
        errors.len() as u64 <= 2 * seconds + 1,
        "{} protocol error records in {elapsed:?}",
        errors.len()
    );
    let error_bytes: u64 = text
        .lines()
        .filter(|l| l.contains("\"event\":\"protocol_error"))
        .map(|l| l.len() as u64 + 1)
        .sum();
    assert!(
        error_bytes <= 1024 * (2 * seconds + 1),
        "{error_bytes} bytes of protocol error records"
    );
    eprintln!(
        "flood: {FLOOD_BYTES} bytes ({lines_sent} bad lines) in {elapsed:.1?}: the audit log \
         grew {log_bytes} bytes in all, {error_bytes} of them protocol error records ({} \
         records, {:.4} log bytes per input byte); rootfence's stderr: {stderr_bytes} bytes; \
         peak RSS {} KiB",
        errors.len(),
        error_bytes as f64 / FLOOD_BYTES as f64,
        f.peak_rss_kib
    );

    // The log verifies, and the readers count the repeats.
    let out = Command::new(common::rootfence())
        .args(["audit", "verify"])
        .arg(log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = Command::new(common::rootfence())
        .args(["audit", "summary", "--json"])
        .arg(log)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["sessions"][0]["protocol_errors"]["invalid_json"], lines_sent,
        "{v}"
    );
}

/// A flood of valid messages that are each denied (updates for a file nobody subscribed to,
/// outside every root): each denial has its own record, and its message is held until that
/// record is durable; the flood must neither stall the host's requests nor hold unbounded
/// memory, and every denial is on record.
#[test]
fn a_server_flooding_denied_notifications_is_recorded_without_stalling_the_host() {
    let one = r#"{"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "file:///etc/shadow"}}"#;
    let n: u64 = 20_000;
    let f = flood("updated", n * (one.len() as u64 + 1));
    assert_eq!(f.done, format!("flood done: {n} lines"));
    let text = std::fs::read_to_string(&f.log).unwrap();
    let denials = text
        .lines()
        .filter(|l| l.contains(r#""event":"decision""#) && l.contains(r#""decision":"deny""#))
        .count() as u64;
    assert_eq!(denials, n, "every denial is on record");
    eprintln!(
        "denial flood: {n} denied notifications in {:.1?}; log {} bytes; peak RSS {} KiB",
        f.elapsed,
        text.len(),
        f.peak_rss_kib
    );
}
