//! Crash and concurrency: kill -9 processes that log at full speed (several at once, on one
//! file, with rotation), again and again, then check with the real `rootfence audit verify`
//! that the chain is intact up to the last complete record, that every torn line was set
//! aside and accounted for, and that no record was lost or duplicated by concurrent writers.
//!
//! The writers are this test binary re-executed with `ROOTFENCE_AUDIT_CHILD` set, running
//! only the `child_writer` test (a no-op otherwise): real processes with real writer
//! threads, no extra binary to build.

mod audit_support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use audit_support::*;
use rootfence::audit::{AuditLog, EndCause, Event, RootsUpdate, SessionEnd, Verdict};

const CHILD: &str = "ROOTFENCE_AUDIT_CHILD";
const COUNT: &str = "ROOTFENCE_AUDIT_COUNT";

/// The writer run in a child process: logs `COUNT` records (forever if unset) as fast as
/// it can, with long URIs so records span pages and a kill can land mid-write, and with a
/// small rotation size so kills also land mid-rotation.
#[test]
fn child_writer() {
    let Some(path) = std::env::var_os(CHILD) else {
        return;
    };
    let count: u64 = std::env::var(COUNT)
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(u64::MAX);
    let mut cfg = config(Path::new(&path));
    cfg.rotate_bytes = Some(1024 * 1024);
    let log = AuditLog::open(cfg, start()).expect("open");
    let a = log.handle();
    let pad = "x".repeat(3000);
    let big = RootsUpdate {
        trigger: "list_changed".into(),
        received: (0..60)
            .map(|r| format!("file:///r{r}/{}", "y".repeat(4000)).into())
            .collect(),
        ..RootsUpdate::default()
    };
    for i in 0..count {
        if i % 20 == 10 {
            // ~240 KiB: a write spanning many pages, which a kill can cut short.
            a.record(Event::RootsUpdate(big.clone())).expect("record");
        }
        let v = if i % 3 == 0 {
            Verdict::Deny
        } else {
            Verdict::Allow
        };
        a.record(decision(i, &format!("file:///data/{i}/{pad}"), v))
            .expect("record");
    }
    log.close(SessionEnd {
        cause: EndCause::HostClosed,
        ..SessionEnd::default()
    })
    .expect("close");
}

fn spawn_writer(path: &Path, count: Option<u64>) -> Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "child_writer", "--test-threads=1"])
        .env(CHILD, path)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    if let Some(n) = count {
        c.env(COUNT, n.to_string());
    }
    c.spawn().expect("spawn child writer")
}

/// A pseudo-random delay (no rand crate): kills land at varied points.
fn jitter(i: u64) -> Duration {
    let h = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) % 120;
    Duration::from_millis(60 + h)
}

#[test]
fn kill_9_at_full_speed_leaves_a_clean_chain() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    for round in 0..8u64 {
        // Two writers at once on one file, killed at different moments.
        let mut a = spawn_writer(&p, None);
        let mut b = spawn_writer(&p, None);
        std::thread::sleep(jitter(round * 2));
        a.kill().unwrap();
        std::thread::sleep(jitter(round * 2 + 1) / 4);
        b.kill().unwrap();
        a.wait().unwrap();
        b.wait().unwrap();

        // After every round: the chain is intact up to the last complete record. The log
        // is incomplete (torn line, or no session_end), never broken.
        let files = family(d.path(), "audit.jsonl");
        let files: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
        let (code, out) = verify(&files);
        assert_eq!(code, 3, "round {round}: {out}");
        assert!(!out.contains("BROKEN"), "round {round}: {out}");
        assert!(out.contains("chain intact: "), "round {round}: {out}");
    }
    // One clean session at the end: it recovers whatever the last kill tore, and the
    // whole history verifies as intact and complete.
    let mut c = spawn_writer(&p, Some(10));
    assert!(c.wait().unwrap().success());
    let files = family(d.path(), "audit.jsonl");
    let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let (code, out) = verify(&paths);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("17 sessions"), "{out}");
    let torn = out.matches("is an incomplete write").count();
    eprintln!(
        "crash test: {} files, {torn} torn lines set aside and accounted for\n{out}",
        files.len()
    );
}

#[test]
fn concurrent_writers_share_one_chain_without_losing_a_record() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    let n = 600u64;
    let children: Vec<Child> = (0..3).map(|_| spawn_writer(&p, Some(n))).collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let files = family(d.path(), "audit.jsonl");
    assert!(files.len() > 3, "rotation happened: {files:?}");
    let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let (code, out) = verify(&paths);
    assert_eq!(code, 0, "{out}");
    let total = 3 * (n + 2 + n / 20);
    assert!(
        out.contains(&format!(
            "{total} records in {} files, seq 1 to {total}, 3 sessions",
            files.len()
        )),
        "{out}"
    );
    // Each session's records are all there, each once (ids 0..n per session).
    let o = audit(&["summary", "--json"], &paths);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for s in v["sessions"].as_array().unwrap() {
        assert_eq!(s["records"], n + 2 + n / 20, "{s}");
        assert_eq!(s["decisions"]["deny"], n.div_ceil(3), "{s}");
    }
}
