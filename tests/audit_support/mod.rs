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
        request: None,
        principal: None,
        tool: None,
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

/// A decision with every field chosen.
#[allow(clippy::too_many_arguments)]
pub fn call(
    direction: Direction,
    method: &str,
    id: &str,
    tool: Option<&str>,
    field: &str,
    uri: &str,
    verdict: Verdict,
    reason: &str,
    rule: Option<&str>,
) -> Event {
    Event::Decision(Decision {
        direction,
        method: method.into(),
        id: RpcId::from_json(id),
        request: None,
        principal: None,
        tool: tool.map(Into::into),
        field: Some(field.into()),
        uri: uri.into(),
        canonical: Some(uri.into()),
        decision: verdict,
        reason: reason.into(),
        layer: rule.map(|_| "/etc/rootfence/policy.toml".into()),
        rule: rule.map(Into::into),
        root: Some("file:///w/app".into()),
        action: match verdict {
            Verdict::Allow => Action::Forwarded,
            Verdict::Deny => Action::AnsweredError,
        },
    })
}

/// The denied paths of [`incident_log`].
pub const INCIDENT_DENIED: &[&str] = &[
    "file:///w/app/.env",
    "file:///etc/shadow",
    "file:///home/dev/.ssh/id_ed25519",
    "file:///w/app/secrets/prod.key",
];

/// A log of an incident: two sessions with allowed and denied decisions of several
/// methods and tools, server generations and roots updates, and the same JSON-RPC id (5)
/// in both. Session A is written, then (after `gap`) session B. Returns both session ids.
pub fn incident_log(path: &Path, gap: std::time::Duration) -> (String, String) {
    use Direction::{HostToServer as H, ServerToHost as S};
    use Verdict::{Allow, Deny};
    use rootfence::audit::{RootsUpdate, ServerStart};
    let rule = Some(r#"deny[0] "**/.env""#);
    let a = {
        let log = AuditLog::open(config(path), start()).expect("open log");
        let h = log.handle();
        let generation = |g: u32, trigger: &str| {
            Event::ServerStart(ServerStart {
                generation: g,
                trigger: trigger.into(),
                roots: vec!["file:///w/app".into()],
                ..ServerStart::default()
            })
        };
        let roots = Event::RootsUpdate(RootsUpdate {
            trigger: "list_changed".into(),
            received: vec!["file:///w/app".into()],
            effective: vec!["file:///w/app".into()],
            ..RootsUpdate::default()
        });
        let evs = [
            generation(1, "launch"),
            call(
                H,
                "resources/read",
                "1",
                None,
                "params.uri",
                "file:///w/app/README.md",
                Allow,
                "inside_root",
                None,
            ),
            call(
                H,
                "tools/call",
                "2",
                Some("read_text_file"),
                "params.arguments.path",
                "file:///w/app/src/main.rs",
                Allow,
                "inside_root",
                None,
            ),
            call(
                H,
                "tools/call",
                "3",
                Some("read_text_file"),
                "params.arguments.path",
                INCIDENT_DENIED[0],
                Deny,
                "denied_by_rule",
                rule,
            ),
            roots,
            generation(2, "list_changed"),
            call(
                H,
                "tools/call",
                "5",
                Some("write_file"),
                "params.arguments.path",
                INCIDENT_DENIED[1],
                Deny,
                "outside_roots",
                None,
            ),
            call(
                S,
                "tools/call",
                "5",
                Some("write_file"),
                "result.content[0].uri",
                "file:///w/app/out.txt",
                Allow,
                "inside_root",
                None,
            ),
            call(
                H,
                "prompts/get",
                "6",
                None,
                "params.arguments.file",
                "file:///w/app/docs/a.md",
                Allow,
                "inside_root",
                None,
            ),
        ];
        for e in evs {
            h.record(e).expect("record");
        }
        let id = log.session_id().to_owned();
        log.close(SessionEnd {
            cause: EndCause::HostClosed,
            exit_code: Some(0),
            ..SessionEnd::default()
        })
        .expect("close");
        id
    };
    std::thread::sleep(gap);
    let b = {
        let log = AuditLog::open(config(path), start()).expect("open log");
        let h = log.handle();
        let evs = [
            call(
                H,
                "resources/read",
                "5",
                None,
                "params.uri",
                INCIDENT_DENIED[2],
                Deny,
                "outside_roots",
                None,
            ),
            call(
                H,
                "tools/call",
                "7",
                Some("edit_file"),
                "params.arguments.path",
                INCIDENT_DENIED[3],
                Deny,
                "denied_by_rule",
                Some(r#"deny[1] "**/secrets/**""#),
            ),
            call(
                H,
                "tools/call",
                "8",
                Some("read_text_file"),
                "params.arguments.path",
                "file:///w/app/Cargo.toml",
                Allow,
                "inside_root",
                None,
            ),
            call(
                H,
                "tools/call",
                "9",
                Some("read_text_file"),
                "params.arguments.path",
                "file:///w/app/.env",
                Deny,
                "denied_by_rule",
                rule,
            ),
        ];
        for e in evs {
            h.record(e).expect("record");
        }
        let id = log.session_id().to_owned();
        log.close(SessionEnd {
            cause: EndCause::HostClosed,
            exit_code: Some(0),
            ..SessionEnd::default()
        })
        .expect("close");
        id
    };
    (a, b)
}
