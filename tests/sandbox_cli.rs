//! `rootfence sandbox exec` and `rootfence sandbox probe` through the real binary
//! (issue 7): exit codes, errors, and the suggested `[sandbox]` snippet from strace and
//! from stderr alone. One sandboxed process per test; skips print their reason.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Prints a skip notice past libtest's output capture (which only intercepts the print
/// macros), so a skipped test is never silent.
fn skip(msg: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED {msg}");
}

fn rootfence() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rootfence"))
}

fn landlock_or_skip(test: &str) -> bool {
    if rootfence::sandbox::landlock_abi().is_none() {
        skip(format_args!(
            "{test}: Landlock is not available on this kernel"
        ));
        return false;
    }
    true
}

struct Dirs {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("data.txt"), "x").unwrap();
    Dirs {
        _tmp: tmp,
        root,
        outside,
    }
}

#[test]
fn exec_passes_the_exit_status_through() {
    if !landlock_or_skip("exec_passes_the_exit_status_through") {
        return;
    }
    let out = rootfence()
        .args(["sandbox", "exec", "--", "sh", "-c", "exit 7"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("rootfence: sandbox (best-effort)"),
        "{stderr}"
    );

    let out = rootfence()
        .args(["sandbox", "exec", "-q", "--", "rootfence-no-such-command"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not found on the sandbox PATH"), "{stderr}");
}

#[test]
fn exec_rejects_bad_flags_with_a_hint() {
    let out = rootfence()
        .args(["sandbox", "exec", "--network", "http", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("use allow, deny or 80,443"), "{stderr}");
    let out = rootfence()
        .args(["sandbox", "exec", "--mode", "paranoid", "--", "true"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("best-effort, strict or off"));
}

#[test]
fn the_launcher_entry_refuses_to_be_used_by_hand() {
    for args in [
        vec!["__sandbox-exec"],
        vec!["__sandbox-exec", "3", "4", "--", "true"],
    ] {
        let out = rootfence().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("sandbox"), "{stderr}");
    }
}

fn probe(extra: &[&str], d: &Dirs, script: &str) -> (toml::Value, String) {
    let out = rootfence()
        .args([
            "sandbox",
            "probe",
            "--timeout",
            "20",
            "--network",
            "deny",
            "--root",
        ])
        .arg(&d.root)
        .args(extra)
        .args(["--", "sh", "-c", script])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let v: toml::Value = toml::from_str(&stdout).unwrap_or_else(|e| panic!("{e}:\n{stdout}"));
    (v, stderr)
}

fn strings(v: &toml::Value, key: &str) -> Vec<String> {
    v["sandbox"]
        .get(key)
        .and_then(|a| a.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn probe_with_strace_suggests_the_denied_paths() {
    if !landlock_or_skip("probe_with_strace_suggests_the_denied_paths") {
        return;
    }
    if rootfence::sandbox::probe::find_strace().is_none() {
        skip(format_args!(
            "probe_with_strace_suggests_the_denied_paths: strace not installed \
             (the stderr-only probe is tested by probe_without_strace_reads_stderr)"
        ));
        return;
    }
    let d = dirs();
    let cache_home = d.root.parent().unwrap().join("cache-home");
    std::fs::create_dir(&cache_home).unwrap();
    let script = format!(
        "cat {o}/data.txt >/dev/null 2>&1; mkdir {c}/cache 2>/dev/null; echo ok > {r}/fine",
        o = d.outside.display(),
        c = cache_home.display(),
        r = d.root.display()
    );
    let (v, stderr) = probe(&[], &d, &script);
    assert_eq!(
        strings(&v, "read"),
        vec![d.outside.join("data.txt").display().to_string()],
        "{stderr}"
    );
    // A directory that could not be created is suggested as its existing parent.
    assert_eq!(
        strings(&v, "write"),
        vec![cache_home.display().to_string()],
        "{stderr}"
    );
    assert!(
        stderr.contains("(openat)") && stderr.contains("(mkdir)"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(d.root.join("fine")).unwrap(),
        "ok\n"
    );
}

#[test]
fn probe_without_strace_reads_stderr() {
    if !landlock_or_skip("probe_without_strace_reads_stderr") {
        return;
    }
    let d = dirs();
    let script = format!("cat {o}/data.txt", o = d.outside.display());
    let (v, stderr) = probe(&["--no-strace"], &d, &script);
    assert_eq!(
        strings(&v, "read"),
        vec![d.outside.join("data.txt").display().to_string()],
        "{stderr}"
    );
    assert!(
        stderr.contains("strace not found (--no-strace)"),
        "{stderr}"
    );
}

#[test]
fn probe_stops_a_command_that_does_not_end() {
    if !landlock_or_skip("probe_stops_a_command_that_does_not_end") {
        return;
    }
    let start = std::time::Instant::now();
    let out = rootfence()
        .args([
            "sandbox",
            "probe",
            "--no-strace",
            "--timeout",
            "1",
            "--",
            "sleep",
            "60",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(start.elapsed().as_secs() < 20);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("stopped after 1 s"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("nothing to add"), "{stdout}");
}
