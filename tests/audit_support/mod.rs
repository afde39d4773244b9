//! Helpers shared by the `tests/audit_*.rs` end-to-end tests: building logs with the real
//! writer and running the real `rootfence audit ...` binary on them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rootfence::audit::{
    Action, AuditConfig, AuditLog, Decision, Direction, EndCause, Event, FsyncPolicy, RpcId,
    SessionEnd, SessionStart, Verdict,
};

/// The real binary.
pub fn rootfence() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rootfence"))
}

/// Runs `rootfence audit <args>`.
pub fn audit(args: &[&str], files: &[&Path]) -> Output {
    let mut c = rootfence();
    c.arg("audit").args(args).args(files);
    c.output().expect("run rootfence")
}

/// `rootfence audit verify`: exit code and stdout.
pub fn verify(files: &[&Path]) -> (i32, String) {
    let o = audit(&["verify"], files);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
    )
}

/// A decision event.
pub fn decision(i: u64, uri: &str, verdict: Verdict) -> Event {
    Event::Decision(Decision {
        direction: Direction::HostToServer,
        method: "resources/read".into(),
        id: RpcId::from_json(&i.to_string()),
        field: Some("params.uri".into()),
        uri: uri.into(),
        canonical: Some(uri.into()),
        decision: verdict,
        reason: match verdict {
            Verdict::Allow => "inside_root".into(),
            Verdict::Deny => "outside_roots".into(),
        },
        layer: None,
        rule: None,
        root: Some("file:///data".into()),
        action: match verdict {
            Verdict::Allow => Action::Forwarded,
            Verdict::Deny => Action::AnsweredError,
        },
    })
}

/// A start record for a test session.
pub fn start() -> SessionStart {
    let mut s = SessionStart::new(&["test-server".into(), "--flag".into()], Path::new("/tmp"));
    s.effective_roots = vec!["file:///data".into()];
    s
}

/// Config for tests: no fsync (tmpfs speed), no rotation.
pub fn config(path: &Path) -> AuditConfig {
    let mut c = AuditConfig::new(path);
    c.fsync = FsyncPolicy::Never;
    c.rotate_bytes = None;
    // These tests count every record ever written; retention has its own tests.
    c.retain_files = None;
    c
}

/// Writes one whole session of `n` decisions (every 5th denied) and returns the session id.
pub fn write_session(cfg: AuditConfig, n: u64) -> String {
    let log = AuditLog::open(cfg, start()).expect("open log");
    let a = log.handle();
    for i in 0..n {
        let v = if i % 5 == 4 {
            Verdict::Deny
        } else {
            Verdict::Allow
        };
        a.record(decision(i, &format!("file:///data/f{i}.txt"), v))
            .expect("record");
    }
    let id = log.session_id().to_owned();
    log.close(SessionEnd {
        cause: EndCause::HostClosed,
        exit_code: Some(0),
        ..SessionEnd::default()
    })
    .expect("close");
    id
}

/// The lines of a file (without `\n`), as bytes.
pub fn lines(p: &Path) -> Vec<Vec<u8>> {
    let data = std::fs::read(p).expect("read log");
    data.split_inclusive(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\n").unwrap_or(l).to_vec())
        .collect()
}

/// Writes lines back, each with `\n`.
pub fn write_lines(p: &Path, lines: &[Vec<u8>]) {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    std::fs::write(p, out).expect("write log");
}

/// The files of a log family in a directory: rotated ones and the active one.
pub fn family(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n == name || n.starts_with(&format!("{name}.")))
        })
        .collect();
    v.sort();
    v
}
