//! `rootfence wrap --learn` (issue 27): start a wrapped server once, exactly as its host
//! would start it (`rootfence run ... -- <server>`, the default sandbox), up to
//! `initialize` and `tools/list`, bounded in time; when it does not get there, learn the
//! smallest grants that the sandbox's denials say it needs (`sandbox probe`'s analysis), so
//! that `wrap` can show them beside the entry and write them with the user's consent.
//!
//! Rules the learning keeps:
//! - a trial happens only when the user asked for it (`--learn`): starting a server can
//!   have side effects;
//! - the trial runs in its own process group, killed when it ends (and rootfence's launcher
//!   dies with its parent), so nothing outlives it;
//! - a server that creates a state directory in a place too broad to grant (the home
//!   directory, `~/.config`, `~/.local/share`, `~/.cache`) gets that new directory, created
//!   now (mode 0700), never its parent or the home;
//! - a learned grant goes through the policy's grant check (`Policy::check_grant`), so it
//!   can never reach what the policy denies; the probe's own exclusions (terminals, `/proc`,
//!   shared temp dirs, broad directories) hold too.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::Learned;
use crate::policy::{Grant, Policy};
use crate::sandbox::probe::{self, Denial, Findings, Need};

/// How a trial start ended.
#[derive(Debug, Clone, Default)]
pub struct Trial {
    /// The server answered `initialize`.
    pub initialized: bool,
    /// The server answered `tools/list` (a result or an error: it runs).
    pub listed: bool,
    /// How long it took, or until it was given up.
    pub took: Duration,
    /// The last lines of its stderr (rootfence's and the server's).
    pub stderr_tail: Vec<String>,
    /// What the sandbox denied it.
    pub findings: Findings,
}

impl Trial {
    /// Whether the server started: it answered `initialize` and `tools/list`.
    pub fn started(&self) -> bool {
        self.initialized && self.listed
    }
}

/// Largest amount of stderr kept from a trial.
const MAX_STDERR: usize = 1 << 20;
/// Lines of stderr shown when a trial fails.
const TAIL_LINES: usize = 12;

/// Starts `argv` (a `rootfence run ... -- <server>` command line) with `env` added to this
/// process's environment, in `cwd`; sends `initialize`, `notifications/initialized` and
/// `tools/list`; stops everything it started when both are answered, when the server
/// exits, or at `timeout`. Under strace when `strace` is given.
pub fn trial(
    argv: &[OsString],
    env: &[(String, String)],
    cwd: &Path,
    timeout: Duration,
    strace: Option<&Path>,
) -> std::io::Result<Trial> {
    let logdir = tempfile::tempdir()?;
    let log = logdir.path().join("strace.log");
    let (mut cmd, args) = match strace {
        Some(s) => (probe::strace_command(s, &log), argv),
        None => (Command::new(&argv[0]), &argv[1..]),
    };
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group: stopping the trial reaches everything it started.
        .process_group(0);
    let started_at = Instant::now();
    let mut child = cmd.spawn()?;
    let pgid = nix::unistd::Pid::from_raw(-(child.id() as i32));
    let mut stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();

    let (tx, rx) = mpsc::channel::<serde_json::Value>();
    let reader = std::thread::spawn(move || {
        let Some(out) = stdout else { return };
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                && tx.send(v).is_err()
            {
                break;
            }
        }
    });
    let err_reader = std::thread::spawn(move || {
        let mut kept = Vec::new();
        if let Some(mut err) = stderr {
            let mut buf = [0u8; 8192];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if kept.len() < MAX_STDERR {
                    kept.extend_from_slice(&buf[..n]);
                }
            }
        }
        String::from_utf8_lossy(&kept).into_owned()
    });

    let deadline = started_at + timeout;
    let mut send = |v: serde_json::Value| {
        if let Some(w) = stdin.as_mut() {
            let _ = writeln!(w, "{v}").and_then(|()| w.flush());
        }
    };
    let wait_for = |id: u64| -> Option<serde_json::Value> {
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match rx.recv_timeout(left) {
                Ok(v) if v["id"] == id => return Some(v),
                Ok(_) => continue,
                Err(_) => return None,
            }
        }
    };
    let mut t = Trial::default();
    send(serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": crate::mcp::methods::INITIALIZE,
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "rootfence-wrap-learn", "version": env!("CARGO_PKG_VERSION")}
        }
    }));
    if let Some(r) = wait_for(1) {
        t.initialized = r.get("result").is_some();
        if t.initialized {
            send(serde_json::json!({"jsonrpc": "2.0", "method": crate::mcp::methods::INITIALIZED}));
            send(
                serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": crate::mcp::methods::TOOLS_LIST}),
            );
            t.listed = wait_for(2).is_some();
        }
    }
    t.took = started_at.elapsed();
    // Stop: end of input first (servers exit on it), then the whole group.
    drop(stdin);
    stop_group(&mut child, pgid);
    let _ = reader.join();
    let stderr_text = err_reader.join().unwrap_or_default();
    let lines: Vec<&str> = stderr_text.lines().collect();
    let tail = &lines[lines.len().saturating_sub(TAIL_LINES)..];
    t.stderr_tail = tail.iter().map(|l| (*l).to_owned()).collect();
    t.findings = match strace {
        Some(_) => probe::read_strace_log(&log),
        None => probe::parse_stderr(&stderr_text),
    };
    Ok(t)
}

/// Ends the trial's process group: a grace period after end of input, then SIGTERM, then
/// SIGKILL; reaps the leader.
fn stop_group(child: &mut std::process::Child, pgid: nix::unistd::Pid) {
    use nix::sys::signal::{Signal, kill};
    let alive = || kill(pgid, None).is_ok();
    let wait_until = |child: &mut std::process::Child, until: Instant| {
        while alive() && Instant::now() < until {
            let _ = child.try_wait();
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_until(child, Instant::now() + Duration::from_millis(1500));
    if alive() {
        let _ = kill(pgid, Signal::SIGTERM);
        wait_until(child, Instant::now() + Duration::from_secs(2));
    }
    if alive() {
        let _ = kill(pgid, Signal::SIGKILL);
    }
    let _ = child.wait();
}

/// What the user's home holds that is too broad to grant: a server creating its state
/// directly in one of these gets the new directory, never the place itself.
fn broad_places(home: &Path) -> Vec<PathBuf> {
    let inside = super::derive::HOME_PLACES.iter().map(|d| home.join(d));
    std::iter::once(home.to_owned()).chain(inside).collect()
}

/// The grants a failed trial's findings call for: new state directories (created now) and
/// `probe::suggest`'s read and write entries, each checked against the policy. Returns them
/// with notes on what was not learned and why.
pub fn learn(
    findings: &Findings,
    policy: &Policy,
    home: Option<&Path>,
    cwd: &Path,
) -> (Vec<Learned>, Vec<String>) {
    let mut learned: Vec<Learned> = Vec::new();
    let mut notes = Vec::new();
    let mut rest = Findings {
        denials: Vec::new(),
        ..findings.clone()
    };
    let broad = home.map(broad_places).unwrap_or_default();
    for d in &findings.denials {
        match new_state_dir(d, &broad) {
            NewState::Dir(dir) => {
                let why = format!(
                    "a new state directory: the server was denied creating {} ({})",
                    d.path.display(),
                    d.op
                );
                if !learned.iter().any(|l| Path::new(&l.path) == dir) {
                    learned.push(Learned {
                        flag: "--write",
                        path: dir.display().to_string(),
                        why,
                    });
                }
            }
            NewState::File(parent) => notes.push(format!(
                "the server was denied creating the file {} directly in {}, which is too broad \
                 to grant; not learned (give the server a directory of its own for it)",
                d.path.display(),
                parent.display()
            )),
            NewState::No => rest.denials.push(d.clone()),
        }
    }
    let ctx = probe::Context {
        cwd: Some(cwd.to_owned()),
        home: home.map(Path::to_owned),
    };
    let s = probe::suggest_in(&rest, &crate::sandbox::SandboxSpec::default(), &ctx);
    for (paths, flag) in [(&s.write, "--write"), (&s.read, "--read")] {
        for p in paths {
            let why = rest
                .denials
                .iter()
                .find(|d| d.path.starts_with(p))
                .map(|d| {
                    let need = d.need.verb();
                    format!(
                        "the server was denied to {need} {} ({})",
                        d.path.display(),
                        d.op
                    )
                })
                .unwrap_or_else(|| "denied to the server".to_owned());
            learned.push(Learned {
                flag,
                path: p.display().to_string(),
                why,
            });
        }
    }
    for (p, why) in &s.left_out {
        notes.push(format!("not learned: {}: {why}", p.display()));
    }
    // Never past the policy: a learned grant is judged like a --read/--write.
    learned.retain(|l| {
        let path = Path::new(&l.path);
        let grant = if l.flag == "--write" {
            Grant::Write(path)
        } else {
            Grant::Read(path)
        };
        match policy.check_grant(grant) {
            Ok(()) => true,
            Err(refused) => {
                notes.push(format!("not learned: {} {}: {refused}", l.flag, l.path));
                false
            }
        }
    });
    (learned, notes)
}

/// Creates the new state directories among `learned` (mode 0700), as the server would have
/// (a directory that does not exist cannot be granted). Returns what it created.
pub fn create_state_dirs(learned: &[Learned]) -> Vec<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    learned
        .iter()
        .filter(|l| l.flag == "--write")
        .map(|l| Path::new(&l.path))
        .filter(|p| !p.exists() && std::fs::DirBuilder::new().mode(0o700).create(p).is_ok())
        .map(Path::to_owned)
        .collect()
}

enum NewState {
    /// The directory to create and grant.
    Dir(PathBuf),
    /// A file directly in this broad place: not learned.
    File(PathBuf),
    /// Not a creation in a broad place.
    No,
}

/// Directories in the home that hold credentials: never learned as a server's state.
const CREDENTIAL_DIRS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".password-store",
    "gh",
];

/// Whether a denial is the server keeping its state in a place too broad to grant (the
/// home, `~/.config`, `~/.local/share`, `~/.cache`, ...): a write beneath the deepest such
/// place. Its state directory is the first component under it: created when it does not
/// exist yet; when it exists, taken only if it is a tool's own (a dot-directory in the
/// home, or any directory in the XDG places), never a folder of the user's such as
/// `~/Documents` (then probe's suggestion decides).
fn new_state_dir(d: &Denial, broad: &[PathBuf]) -> NewState {
    if d.need != Need::Write || !d.path.is_absolute() {
        return NewState::No;
    }
    let path = probe::normalized(&d.path);
    let Some(place) = broad
        .iter()
        .filter(|b| path.starts_with(b) && path != **b)
        .max_by_key(|b| b.components().count())
    else {
        return NewState::No;
    };
    let Ok(rest) = path.strip_prefix(place) else {
        return NewState::No;
    };
    let Some(first) = rest.components().next() else {
        return NewState::No;
    };
    let name = first.as_os_str().to_string_lossy();
    if CREDENTIAL_DIRS.contains(&name.as_ref()) {
        return NewState::No;
    }
    let dir = place.join(first);
    let deeper = rest.components().count() > 1;
    match dir.symlink_metadata() {
        Err(_) => {
            let mkdir = d.op.starts_with("mkdir");
            if deeper || mkdir {
                NewState::Dir(dir)
            } else {
                NewState::File(place.to_owned())
            }
        }
        Ok(m) if m.is_dir() && deeper => {
            let in_home = broad.first() == Some(place);
            if !in_home || name.starts_with('.') {
                NewState::Dir(dir)
            } else {
                NewState::No
            }
        }
        Ok(_) => NewState::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn denial(path: &Path, need: Need, op: &str) -> Denial {
        Denial {
            path: path.to_owned(),
            need,
            op: op.into(),
        }
    }

    #[test]
    fn a_new_state_directory_in_the_home_is_learned_never_the_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(home.join(".config")).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "k").unwrap();
        std::fs::create_dir_all(home.join("proj/cache")).unwrap();
        let findings = Findings {
            denials: vec![
                // basic-memory: ~/.basic-memory/config.json, ~/.config/basic-memory
                denial(&home.join(".basic-memory"), Need::Write, "mkdir"),
                denial(
                    &home.join(".basic-memory/config.json"),
                    Need::Write,
                    "openat",
                ),
                denial(&home.join(".config/basic-memory/x"), Need::Write, "openat"),
                // A file straight in the home: not learned.
                denial(&home.join(".tool.log"), Need::Write, "openat"),
                // An existing directory: probe's suggestion.
                denial(&home.join("proj/cache/f"), Need::Write, "openat"),
                // A key: the built-in policy refuses it.
                denial(&home.join(".ssh/id_rsa"), Need::Read, "openat"),
                // The home itself.
                denial(&home, Need::Read, "openat"),
            ],
            restricted: true,
            ..Findings::default()
        };
        let policy = Policy::load_with_home(&[], home.to_str()).unwrap();
        let (learned, notes) = learn(&findings, &policy, Some(&home), Path::new("/"));
        let got: Vec<(&str, PathBuf)> = learned
            .iter()
            .map(|l| (l.flag, PathBuf::from(&l.path)))
            .collect();
        assert_eq!(
            got,
            [
                ("--write", home.join(".basic-memory")),
                ("--write", home.join(".config/basic-memory")),
                ("--write", home.join("proj/cache")),
            ],
            "{notes:?}"
        );
        assert!(
            learned[0].why.contains("a new state directory"),
            "{learned:?}"
        );
        let notes = notes.join("\n");
        assert!(notes.contains(".tool.log"), "{notes}");
        assert!(notes.contains("id_rsa"), "{notes}");
        assert!(notes.contains("too broad"), "{notes}");
        // An existing state directory (a second --learn, after the first created it): the
        // directory again, not the one file the server was denied.
        std::fs::create_dir_all(home.join(".serena/logs")).unwrap();
        std::fs::create_dir_all(home.join("Documents")).unwrap();
        let again = Findings {
            denials: vec![
                denial(&home.join(".serena/logs/x.log"), Need::Write, "openat"),
                denial(&home.join("Documents/notes.txt"), Need::Write, "openat"),
                denial(&home.join(".ssh/known_hosts"), Need::Write, "openat"),
            ],
            ..Findings::default()
        };
        let (l2, _) = learn(&again, &policy, Some(&home), Path::new("/"));
        let got: Vec<PathBuf> = l2.iter().map(|l| PathBuf::from(&l.path)).collect();
        assert_eq!(
            got,
            [home.join(".serena"), home.join("Documents")],
            "{l2:?}"
        );
        // Created on request, mode 0700.
        let made = create_state_dirs(&learned);
        assert_eq!(made.len(), 2);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.join(".basic-memory"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
