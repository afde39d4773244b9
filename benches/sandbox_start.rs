//! Start-up cost of the sandbox (issue 7, target: under 5 ms added).
//!
//! Each iteration spawns `/bin/true` and waits for it:
//! - `direct`: `std::process::Command` on `/bin/true`, the baseline;
//! - `launcher_default_profile`: through `prepare_with_launcher` with the default profile
//!   and a private temp dir (what `rootfence run` does), reading the report like the relay;
//! - `launcher_minimal`: the launcher with no profile and no temp dir (the fixed cost of
//!   re-exec + Landlock + report);
//! - `prepare_only`: computing the profile and the plan, creating the memfd, pipe and temp
//!   dir, without spawning.
//!
//! Run: `cargo bench --bench sandbox_start -- --warm-up-time 1 --measurement-time 3`

use std::path::Path;
use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};
use rootfence::sandbox::{self, SandboxMode, SandboxSpec};

fn launcher() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_rootfence"))
}

fn run_sandboxed(spec: &SandboxSpec) {
    let mut p = sandbox::prepare_with_launcher(spec, &["/bin/true".into()], launcher()).unwrap();
    let mut child = p
        .command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let report = p.session.take_report_reader().unwrap().read_blocking();
    assert!(report.is_ok(), "{report:?}");
    assert!(child.wait().unwrap().success());
}

fn start(c: &mut Criterion) {
    if sandbox::landlock_abi().is_none() {
        eprintln!("sandbox_start: Landlock unavailable; measuring the launcher without it");
    }
    let mut g = c.benchmark_group("sandbox_start");
    g.bench_function("direct", |b| {
        b.iter(|| {
            let s = Command::new("/bin/true")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(s.success());
        })
    });
    let full = SandboxSpec::new(SandboxMode::BestEffort);
    g.bench_function("launcher_default_profile", |b| {
        b.iter(|| run_sandboxed(&full))
    });
    let mut minimal = SandboxSpec::new(SandboxMode::BestEffort);
    minimal.default_profile = false;
    minimal.private_tmp = false;
    minimal.read.push("/".into());
    g.bench_function("launcher_minimal", |b| b.iter(|| run_sandboxed(&minimal)));
    g.bench_function("prepare_only", |b| {
        b.iter(|| {
            let p =
                sandbox::prepare_with_launcher(&full, &["/bin/true".into()], launcher()).unwrap();
            drop(p);
        })
    });
    g.finish();
}

criterion_group!(benches, start);
criterion_main!(benches);
