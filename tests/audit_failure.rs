//! Fail closed: a log that cannot be written stops the session (`on_failure = "stop"`) with
//! a clear error naming the file, or only warns (`"continue"`).
//!
//! A full disk is simulated with a file size limit (RLIMIT_FSIZE, set with `ulimit -f` in a
//! shell that also ignores SIGXFSZ, so the write fails with EFBIG instead of killing the
//! process); a permission failure with a read-only directory, in a process running as
//! `nobody` when the tests run as root (root ignores directory permissions). Each runs in
//! its own child process: this test binary re-executed with `ROOTFENCE_AUDIT_FAIL` set.

mod audit_support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use audit_support::*;
use rootfence::audit::{AuditError, AuditLog, OnFailure, SessionEnd, Verdict};

const MODE: &str = "ROOTFENCE_AUDIT_FAIL";
const PATH: &str = "ROOTFENCE_AUDIT_PATH";

/// The child side. Prints one line saying what happened, which the parent checks.
#[test]
fn child_failure() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    let path = std::path::PathBuf::from(std::env::var_os(PATH).unwrap());
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .try_init();
    let mut cfg = config(&path);
    match mode.as_str() {
        "stop" | "continue" => {
            if mode == "continue" {
                cfg.on_failure = OnFailure::Continue;
            }
            let log = AuditLog::open(cfg, start()).expect("open");
            let a = log.handle();
            for i in 0..2000u64 {
                let r = a.record_blocking(decision(i, "file:///data/x", Verdict::Deny));
                if let Err(e) = r {
                    assert!(a.failed().is_some());
                    // Later records are refused at once, and the failure future resolves.
                    assert!(a.record(decision(0, "file:///y", Verdict::Allow)).is_err());
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .build()
                        .unwrap();
                    let f = rt.block_on(a.failure());
                    assert_eq!(f.to_string(), e.to_string());
                    println!("STOPPED after {i} records: {e}");
                    return;
                }
            }
            assert!(a.failed().is_none());
            println!("CONTINUED through 2000 records");
            drop(log);
        }
        "open" => match AuditLog::open(cfg, start()) {
            Ok(_) => println!("OPENED"),
            Err(e) => println!("REFUSED: {e}"),
        },
        "rotate" => {
            // The directory turns read-only mid-session; the next rotation fails.
            cfg.rotate_bytes = Some(4096);
            let log = AuditLog::open(cfg, start()).expect("open");
            let dir = path.parent().unwrap();
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
            let a = log.handle();
            for i in 0..1000u64 {
                if let Err(e) = a.record_blocking(decision(i, "file:///data/x", Verdict::Deny)) {
                    println!("STOPPED after {i} records: {e}");
                    let r = log.close(SessionEnd::default());
                    println!("CLOSE: {r:?}");
                    return;
                }
            }
            println!("NO FAILURE");
        }
        other => panic!("unknown mode {other}"),
    }
}

fn child(mode: &str, path: &Path, shell_prefix: Option<&str>, as_nobody: bool) -> Output {
    let exe = std::env::current_exe().unwrap();
    let mut c = match shell_prefix {
        Some(prefix) => {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!("{prefix}; exec \"$0\" \"$@\""))
                .arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    c.args([
        "--exact",
        "child_failure",
        "--test-threads=1",
        "--nocapture",
    ])
    .env(MODE, mode)
    .env(PATH, path);
    if as_nobody {
        use std::os::unix::process::CommandExt;
        c.uid(65534).gid(65534);
    }
    c.output().expect("spawn child")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const FULL_DISK: &str = "trap '' XFSZ; ulimit -f 64";

#[test]
fn full_disk_stops_the_session_with_a_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    let o = child("stop", &p, Some(FULL_DISK), false);
    let out = stdout(&o);
    assert!(o.status.success(), "{o:?}");
    assert!(out.contains("STOPPED after "), "{out}");
    assert!(
        out.contains(&format!("cannot write audit log {}", p.display())),
        "{out}"
    );
    assert!(out.contains("File too large"), "{out}");
    assert!(out.contains("free disk space"), "{out}");
    // What was written before the failure is intact; the log just ends early.
    let (code, v) = verify(&[&p]);
    assert_eq!(code, 3, "{v}");
    assert!(v.contains("chain intact"), "{v}");
}

#[test]
fn full_disk_with_on_failure_continue_only_warns() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    let o = child("continue", &p, Some(FULL_DISK), false);
    let out = stdout(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{o:?}");
    assert!(out.contains("CONTINUED through 2000 records"), "{out}");
    assert!(
        err.contains("continuing because audit.on_failure = \"continue\""),
        "{err}"
    );
    assert!(err.contains("File too large"), "{err}");
    // Warned once per failure streak, not once per record. (The size limit is per file:
    // each failed write leaves a torn line, the next batch sets that file aside and starts
    // a new one, which fills up again, so there is one streak per ~32 KiB file.)
    let warnings = err.matches("continuing because").count();
    assert!(warnings < 2000 / 20, "{warnings} warnings");
    // Every record that did get written is still in one intact chain across the files,
    // each torn line accounted for.
    let files = family(d.path(), "audit.jsonl");
    let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let (code, v) = verify(&paths);
    assert!(code == 0 || code == 3, "{v}");
    assert!(v.contains("chain intact"), "{v}");
}

#[test]
fn a_log_that_cannot_take_its_first_record_refuses_to_open() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    let o = child("open", &p, Some("trap '' XFSZ; ulimit -f 0"), false);
    let out = stdout(&o);
    assert!(out.contains("REFUSED: cannot write audit log"), "{out}");
}

/// Runs as `nobody` when root; skips with a printed reason when that is impossible.
fn read_only_child(mode: &str, setup: impl Fn(&Path) -> std::path::PathBuf) -> Option<Output> {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let is_root = nix::unistd::geteuid().is_root();
    let p = setup(d.path());
    if is_root {
        let dir = p.parent().unwrap();
        std::os::unix::fs::chown(dir, Some(65534), Some(65534)).unwrap();
        // tempdir lives under a world-traversable /tmp; the test binary must be readable too.
    }
    let o = child(mode, &p, None, is_root);
    if is_root
        && String::from_utf8_lossy(&o.stderr).contains("Permission denied (os error 13)")
        && o.stdout.is_empty()
    {
        eprintln!("SKIPPED: the test binary is not executable as nobody here");
        return None;
    }
    // Leave the directory removable.
    let _ = std::fs::set_permissions(p.parent().unwrap(), std::fs::Permissions::from_mode(0o755));
    Some(o)
}

#[test]
fn read_only_directory_refuses_to_open() {
    let Some(o) = read_only_child("open", |d| {
        let ro = d.join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        ro.join("audit.jsonl")
    }) else {
        return;
    };
    let out = stdout(&o);
    assert!(
        out.contains("REFUSED: cannot open audit log"),
        "{out} {o:?}"
    );
    assert!(out.contains("ro/"), "{out}");
    assert!(out.contains("Permission denied"), "{out}");
}

#[test]
fn directory_turning_read_only_stops_the_session_at_rotation() {
    let Some(o) = read_only_child("rotate", |d| {
        let rw = d.join("rw");
        std::fs::create_dir(&rw).unwrap();
        rw.join("audit.jsonl")
    }) else {
        return;
    };
    let out = stdout(&o);
    assert!(out.contains("STOPPED after "), "{out} {o:?}");
    assert!(out.contains("cannot write audit log"), "{out}");
    assert!(out.contains("Permission denied"), "{out}");
    // close() reports the failure too, rather than pretending the session ended cleanly.
    assert!(out.contains("CLOSE: Err("), "{out}");
}

#[test]
fn reserved_events_cannot_be_recorded() {
    let d = tempfile::tempdir().unwrap();
    let log = AuditLog::open(config(&d.path().join("a.jsonl")), start()).unwrap();
    let a = log.handle();
    let e = a
        .record(rootfence::audit::Event::SessionEnd(SessionEnd::default()))
        .unwrap_err();
    assert!(matches!(e, AuditError::Reserved("session_end")), "{e}");
    log.close(SessionEnd::default()).unwrap();
    // After close, handles fail instead of silently dropping records.
    let e = a
        .record(decision(1, "file:///x", Verdict::Deny))
        .unwrap_err();
    assert!(matches!(e, AuditError::Closed), "{e}");
}
