//! Audit log throughput: the writer (records through `Auditor::record` until written) and
//! `verify` (records checked per second; the target is at least 200k/s).
//!
//! Run: `cargo bench --bench audit -- --warm-up-time 1 --measurement-time 3`

use std::path::Path;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rootfence::audit::{
    Action, AuditConfig, AuditLog, Decision, Direction, Event, FsyncPolicy, RpcId, SessionEnd,
    SessionStart, Verdict, VerifyOptions, verify_files_with,
};

/// A decision as the relay logs it for a typical `resources/read`.
fn decision(i: u64) -> Event {
    let deny = i % 10 == 9;
    Event::Decision(Decision {
        direction: Direction::HostToServer,
        method: "resources/read".into(),
        id: RpcId::from_json(&i.to_string()),
        request: None,
        principal: None,
        tool: None,
        field: Some("params.uri".into()),
        uri: format!("file:///home/user/project/src/module_{i}/file_{i}.rs").into(),
        canonical: Some(format!("file:///home/user/project/src/module_{i}/file_{i}.rs").into()),
        decision: if deny { Verdict::Deny } else { Verdict::Allow },
        reason: if deny { "outside_roots" } else { "inside_root" }.into(),
        layer: None,
        rule: None,
        root: Some("file:///home/user/project".into()),
        action: if deny {
            Action::AnsweredError
        } else {
            Action::Forwarded
        },
    })
}

fn config(path: &Path, fsync: FsyncPolicy) -> AuditConfig {
    let mut c = AuditConfig::new(path);
    c.fsync = fsync;
    c.rotate_bytes = None;
    c
}

fn start() -> SessionStart {
    SessionStart::new(&["server".into()], Path::new("/"))
}

/// Logs `n` decisions and waits until the last is written.
fn write_n(path: &Path, n: u64, fsync: FsyncPolicy) {
    let log = AuditLog::open(config(path, fsync), start()).unwrap();
    let a = log.handle();
    for i in 0..n - 1 {
        a.record(decision(i)).unwrap();
    }
    // Queue order is write order: when this one is written, all are.
    a.record_blocking(decision(n - 1)).unwrap();
    log.close(SessionEnd::default()).unwrap();
}

fn writer(c: &mut Criterion) {
    const N: u64 = 20_000;
    let mut g = c.benchmark_group("audit_writer");
    g.throughput(Throughput::Elements(N));
    g.sample_size(10);
    // `never`: the writer's own cost (serialization, hashing, one write() per record).
    // `denials` (the default): every 10th record is a denial and forces an fdatasync.
    for (name, policy) in [
        ("fsync_never", FsyncPolicy::Never),
        ("fsync_denials", FsyncPolicy::Denials),
    ] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || tempfile::tempdir().unwrap(),
                |d| write_n(&d.path().join("audit.jsonl"), N, policy),
                BatchSize::PerIteration,
            );
        });
    }
    g.finish();
}

fn verify(c: &mut Criterion) {
    const N: u64 = 200_000;
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.jsonl");
    write_n(&p, N, FsyncPolicy::Never);
    let bytes = std::fs::metadata(&p).unwrap().len();
    let files = vec![p];
    // Sanity: the file verifies, so the benchmark measures the success path in full.
    let r = verify_files_with(&files, VerifyOptions::default(), None).unwrap();
    assert!(r.broken.is_none() && r.incomplete.is_none());
    assert_eq!(r.records, N + 2);
    eprintln!("verify input: {} records, {} bytes", N + 2, bytes);

    let mut g = c.benchmark_group("audit_verify");
    g.throughput(Throughput::Elements(N + 2));
    g.sample_size(10);
    g.bench_function("200k_records", |b| {
        b.iter(|| verify_files_with(&files, VerifyOptions::default(), None).unwrap());
    });
    g.finish();
}

criterion_group!(benches, writer, verify);
criterion_main!(benches);
