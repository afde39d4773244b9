//! `rootfence sandbox probe`: finds what a confined command was denied, and turns it into
//! a suggested `[sandbox]` table.
//!
//! Two sources, best first:
//! - an strace log (`strace -f -y` around the launcher): every failed syscall with its
//!   path and flags, after the launcher's `landlock_restrict_self`. Landlock reports its
//!   denials as `EACCES` (files, TCP) or `EPERM` (scopes); syscalls Landlock does not
//!   govern (`stat`, `access`, `chmod`, ...) are ignored.
//! - the command's stderr, when strace is absent: the messages node
//!   (`EACCES: permission denied, open '/x'`), python (`[Errno 13] Permission denied:
//!   '/x'`) and C tools (`cat: /x: Permission denied`) print. Less precise: read versus
//!   write is guessed from the operation.
//!
//! Each finding is then re-checked outside the sandbox (`access(2)` by rootfence): a path
//! the file permissions deny anyway is not something a `[sandbox]` table can fix and is
//! dropped from the suggestion.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use super::{Prepared, SandboxError, SandboxSpec};

mod strace;

pub use strace::parse_strace_log;

crate::coded::coded! {
    /// What the command needed.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum Need {
        /// Read a file or list a directory.
        Read => "read",
        /// Execute a file.
        Exec => "execute",
        /// Write, create, remove or rename.
        Write => "write",
    }
    /// The verb shown to the user (`denied read /x`).
    pub fn verb;
}

/// One denial seen.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Denial {
    /// The path denied (absolute when it could be made absolute).
    pub path: PathBuf,
    /// What was attempted.
    pub need: Need,
    /// The syscall or operation that failed (`openat`, `mkdir`, `open` from stderr, ...).
    pub op: String,
}

/// Everything a probe saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// Path denials, in the order first seen, deduplicated.
    pub denials: Vec<Denial>,
    /// TCP ports a `connect` was denied to.
    pub connect_ports: BTreeSet<u16>,
    /// TCP ports a `bind` was denied to.
    pub bind_ports: BTreeSet<u16>,
    /// Signals refused by the signal scope (`kill`, `tgkill` with `EPERM`).
    pub signals: usize,
    /// Whether the log showed the sandbox being applied (strace source only).
    pub restricted: bool,
}

impl Findings {
    /// Keeps the first denial per path and need (strace before stderr).
    fn push(&mut self, d: Denial) {
        if !self
            .denials
            .iter()
            .any(|x| x.path == d.path && x.need == d.need)
        {
            self.denials.push(d);
        }
    }

    /// Pushes the path quoted by `q` in `s`, if any.
    fn push_quoted(&mut self, s: &str, q: char, need: Need, op: &str) {
        if let Some(p) = quoted(s, q) {
            self.push(Denial {
                path: PathBuf::from(p),
                need,
                op: op.to_owned(),
            });
        }
    }
}

/// The suggested additions to a `[sandbox]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Suggestion {
    /// Paths to add to `read`.
    pub read: Vec<PathBuf>,
    /// Paths to add to `write`.
    pub write: Vec<PathBuf>,
    /// Ports to allow, when the network was restricted and connections were denied.
    pub ports: Vec<u16>,
    /// Findings left out, with the reason (denied by file permissions, by policy).
    pub left_out: Vec<(PathBuf, String)>,
}

/// The strace executable on `PATH`, if any.
pub fn find_strace() -> Option<PathBuf> {
    super::profile::lookup(
        std::ffi::OsStr::new("strace"),
        std::env::var_os("PATH").as_deref(),
    )
}

/// Prepares the launcher for `argv` like [`super::prepare_with_launcher`], run under
/// `strace` writing to `log`. strace runs outside the sandbox (it traces the launcher
/// from the start), so it can write its log anywhere.
pub fn prepare_traced(
    spec: &SandboxSpec,
    argv: &[OsString],
    launcher: &Path,
    strace: &Path,
    log: &Path,
) -> Result<Prepared, SandboxError> {
    let mut prepared = super::prepare_with_launcher(spec, argv, launcher)?;
    let inner = &prepared.command;
    let mut traced = strace_command(strace, log);
    traced.arg(inner.get_program()).args(inner.get_args());
    // The pre-exec hook that makes the plan and report descriptors inheritable lives on
    // the inner command; move it over by rebuilding with the same channel.
    super::fds::inherit_in_child(&mut traced, prepared.session.child_fds());
    die_with_parent(&mut traced);
    prepared.command = traced;
    Ok(prepared)
}

/// `strace` following every process and writing to `log` the syscalls a denial shows in
/// (files, network, signals, and the launcher's `landlock_restrict_self`), up to the `--`
/// the traced command line follows.
pub fn strace_command(strace: &Path, log: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(strace);
    c.args(["-f", "-qq", "-y", "-s", "4096", "-e", "signal=none", "-e"])
        .arg("trace=%file,%network,kill,tkill,tgkill,landlock_restrict_self")
        .arg("-o")
        .arg(log)
        .arg("--");
    c
}

/// The findings of the strace log at `log` (none when it cannot be read).
pub fn read_strace_log(log: &Path) -> Findings {
    let text = std::fs::read(log).unwrap_or_default();
    parse_strace_log(&String::from_utf8_lossy(&text))
}

/// strace dies with rootfence (SIGKILL), and the launcher (hence the server) dies with
/// strace (it sets its own parent-death signal), so a killed probe leaves nothing behind.
fn die_with_parent(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = nix::unistd::getpid();
    // SAFETY: runs in the forked child before exec; prctl(2) and getppid(2) are plain
    // async-signal-safe syscalls, and errors are built from raw errno values (stored
    // inline, no allocation); no lock or shared state is touched.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(|e| std::io::Error::from_raw_os_error(e as i32))?;
            // rootfence may have died between fork and prctl: then no signal would come.
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// `p` without `.` components and with `..` applied, lexically: `openat(AT_FDCWD</tmp>,
/// ".")` is `/tmp`, not `/tmp/.`.
pub fn normalized(p: &Path) -> PathBuf {
    let mut out = crate::uri::lexical(p);
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Parses what node, python and C tools print on `EACCES`/`EPERM`.
pub fn parse_stderr(text: &str) -> Findings {
    let mut f = Findings::default();
    for line in text.lines() {
        // node: `Error: EACCES: permission denied, open '/x'`, `connect EACCES 1.2.3.4:443`
        for key in [
            "EACCES: permission denied, ",
            "EPERM: operation not permitted, ",
        ] {
            if let Some(i) = line.find(key) {
                let rest = &line[i + key.len()..];
                let op = rest.split_whitespace().next().unwrap_or("");
                let need = match op {
                    "open" | "scandir" | "opendir" | "readdir" | "access" | "stat" | "lstat"
                    | "realpath" | "readlink" => Need::Read,
                    "spawn" | "uv_spawn" => Need::Exec,
                    _ => Need::Write,
                };
                f.push_quoted(rest, '\'', need, &format!("{op} (stderr)"));
            }
        }
        for (key, ports) in [
            ("connect EACCES ", &mut f.connect_ports),
            ("bind EACCES ", &mut f.bind_ports),
        ] {
            if let Some(i) = line.find(key) {
                let addr = line[i + key.len()..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("");
                ports.extend(addr.rsplit(':').next().and_then(|p| p.parse::<u16>().ok()));
            }
        }
        // python: `PermissionError: [Errno 13] Permission denied: '/x'`; Rust tools (uv,
        // via fs-err): `Permission denied (os error 13) at path "/x"`.
        let py = "python (stderr)";
        for (key, q, need, op) in [
            ("[Errno 13] Permission denied: ", '\'', Need::Read, py),
            ("[Errno 1] Operation not permitted: ", '\'', Need::Read, py),
            ("(os error 13) at path ", '"', Need::Write, "stderr"),
            ("(os error 1) at path ", '"', Need::Write, "stderr"),
        ] {
            if let Some(i) = line.find(key) {
                f.push_quoted(&line[i + key.len()..], q, need, op);
            }
        }
        // C tools: `cat: /x: Permission denied`, `sh: 1: cannot create /x: Permission denied`
        if let Some(head) = line.strip_suffix(": Permission denied")
            && !line.contains("[Errno")
        {
            let candidate = quoted(head, '\'').or_else(|| {
                head.rsplit(": ")
                    .next()
                    .and_then(|s| s.split_whitespace().last())
                    .map(str::to_owned)
            });
            if let Some(p) = candidate.filter(|p| p.starts_with('/')) {
                let need = if head.contains("cannot create") || head.contains("cannot touch") {
                    Need::Write
                } else {
                    Need::Read
                };
                f.push(Denial {
                    path: PathBuf::from(p),
                    need,
                    op: "stderr".into(),
                });
            }
        }
    }
    f
}

fn quoted(s: &str, q: char) -> Option<String> {
    let start = s.find(q)? + 1;
    let end = s[start..].find(q)? + start;
    Some(s[start..end].to_owned())
}

/// What [`suggest_in`] needs to know about where the probe ran.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The probe's working directory (the command's too).
    pub cwd: Option<PathBuf>,
    /// The user's home directory.
    pub home: Option<PathBuf>,
}

impl Context {
    /// This process's working directory and `$HOME`.
    pub fn current() -> Context {
        Context {
            cwd: std::env::current_dir().ok(),
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|h| h.is_absolute()),
        }
    }
}

/// Turns findings into suggested `read`/`write` entries: drops what file permissions deny
/// anyway and what the policy denies on purpose; a path that does not exist (a creation)
/// becomes its nearest existing parent; three or more denials in one directory become
/// the directory.
pub fn suggest_in(findings: &Findings, spec: &SandboxSpec, ctx: &Context) -> Suggestion {
    let mut s = Suggestion::default();
    let mut read = BTreeSet::new();
    let mut write = BTreeSet::new();
    for d in &findings.denials {
        if !d.path.is_absolute() {
            s.left_out
                .push((d.path.clone(), "relative path, directory unknown".into()));
            continue;
        }
        let path = normalized(&d.path);
        if let Some(why) = never_suggested(&path, ctx) {
            s.left_out.push((path, why));
            continue;
        }
        if spec.deny.iter().any(|x| path.starts_with(x)) {
            s.left_out
                .push((path, "denied by the policy on purpose".into()));
            continue;
        }
        let Some(target) = existing_ancestor(&path) else {
            continue;
        };
        let exists = target == path;
        let mode = match d.need {
            Need::Write => nix::unistd::AccessFlags::W_OK,
            Need::Exec => nix::unistd::AccessFlags::X_OK,
            Need::Read => nix::unistd::AccessFlags::R_OK,
        };
        if d.need == Need::Read && !exists {
            // Reading something that does not exist is ENOENT, not a sandbox denial.
            continue;
        }
        if nix::unistd::access(&target, mode).is_err() {
            s.left_out.push((
                path,
                "denied by file permissions too; the sandbox is not the cause".into(),
            ));
            continue;
        }
        match d.need {
            Need::Write => write.insert(target),
            Need::Read | Need::Exec => read.insert(target),
        };
    }
    s.write = collapse(write);
    let read: BTreeSet<PathBuf> = read
        .into_iter()
        .filter(|r| !s.write.iter().any(|w| r.starts_with(w)))
        .collect();
    s.read = collapse(read);
    let ports = findings.connect_ports.union(&findings.bind_ports);
    s.ports = ports.copied().collect();
    s
}

/// Paths a suggestion must never grant, whatever the command tried, with the reason and
/// what to do instead.
fn never_suggested(p: &Path, ctx: &Context) -> Option<String> {
    let terminal =
        p == Path::new("/dev/console") || p.starts_with("/dev/pts") || p.starts_with("/dev/tty");
    if terminal {
        return Some(
            "a terminal: a server that can open it can inject keystrokes (TIOCSTI); \
             not suggested"
                .to_owned(),
        );
    }
    if p == Path::new("/") || p == Path::new("/proc") || p == Path::new("/sys") {
        return Some(
            "too broad to grant (with /proc granted, a confined process can read the \
             environment of every other process of its user); not suggested"
                .to_owned(),
        );
    }
    let mut parts = p.components().skip(1).map(|c| c.as_os_str().to_str());
    if parts.next() == Some(Some("proc"))
        && let Some(Some(second)) = parts.next()
        && (second == "self"
            || second == "thread-self"
            || second.bytes().all(|b| b.is_ascii_digit()))
    {
        return Some(
            "per-process /proc entry of a child process: Landlock binds a grant to \
             the launcher's own pid, and granting /proc would expose other \
             processes' environment; not suggested (runtimes cope without it)"
                .to_owned(),
        );
    }
    if ctx.cwd.as_deref() == Some(p) {
        return Some(format!(
            "the working directory the probe ran in; the sandbox grants it only as a root: \
             run the probe from the server's project, or pass the directory the server \
             works on as --root ({})",
            p.display()
        ));
    }
    for shared in ["/tmp", "/var/tmp", "/dev/shm"] {
        if p == Path::new(shared) {
            return Some(format!(
                "{shared} is shared with every other process; the server has a private \
                 TMPDIR. If it hard-codes {shared}, add `write = [\"{shared}\"]` knowingly"
            ));
        }
    }
    if p.components().count() <= 2 && p != Path::new("/") {
        return Some("a top-level directory: too broad to grant; not suggested".to_owned());
    }
    if let Some(home) = &ctx.home {
        let broad = home.starts_with(p)
            || [".config", ".local", ".local/share", ".cache"]
                .iter()
                .any(|d| p == home.join(d));
        if broad {
            return Some(format!(
                "{} holds the user's files and other tools' settings: too broad to grant; \
                 grant the entry the server needs inside it",
                p.display()
            ));
        }
    }
    None
}

/// Whether a path usually holds credentials (marked in the snippet).
fn holds_credentials(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let file = matches!(
        name,
        ".npmrc" | ".pypirc" | ".netrc" | ".git-credentials" | ".pgpass" | "credentials"
    ) || name.starts_with(".env")
        || name.starts_with("id_rsa")
        || name.starts_with("id_ed25519")
        || name.starts_with("id_ecdsa")
        || name.ends_with(".pem")
        || name.ends_with(".key");
    let dir = p.components().any(|c| {
        matches!(
            c.as_os_str().to_str(),
            Some(".ssh" | ".aws" | ".gnupg" | ".kube" | ".docker" | ".azure" | "gh")
        )
    });
    file || dir
}

fn existing_ancestor(p: &Path) -> Option<PathBuf> {
    p.ancestors()
        .find(|a| a.symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// Three or more siblings become their parent; then entries covered by another entry
/// are removed.
fn collapse(paths: BTreeSet<PathBuf>) -> Vec<PathBuf> {
    let mut by_parent: BTreeMap<PathBuf, usize> = BTreeMap::new();
    for p in &paths {
        if let Some(parent) = p.parent() {
            *by_parent.entry(parent.to_path_buf()).or_default() += 1;
        }
    }
    let mut out: BTreeSet<PathBuf> = paths
        .into_iter()
        .map(|p| match p.parent() {
            Some(parent) if by_parent[parent] >= 3 && parent.components().count() > 2 => {
                parent.to_path_buf()
            }
            _ => p,
        })
        .collect();
    let all: Vec<PathBuf> = out.iter().cloned().collect();
    out.retain(|p| !all.iter().any(|q| q != p && p.starts_with(q)));
    out.into_iter().collect()
}

/// Renders the suggestion as a `[sandbox]` TOML snippet (keys of the policy's table).
pub fn render_toml(s: &Suggestion, network_restricted: bool) -> String {
    let mut out = String::from("[sandbox]\n");
    let list = |out: &mut String, key: &str, paths: &[PathBuf]| {
        if paths.is_empty() {
            return;
        }
        out.push_str(&format!("{key} = [\n"));
        for p in paths {
            out.push_str(&format!("    {},", toml_string(&p.to_string_lossy())));
            if holds_credentials(p) {
                out.push_str("  # may hold credentials: grant only if the server needs it");
            }
            out.push('\n');
        }
        out.push_str("]\n");
    };
    list(&mut out, "read", &s.read);
    list(&mut out, "write", &s.write);
    if network_restricted && !s.ports.is_empty() {
        let ports: Vec<String> = s.ports.iter().map(u16::to_string).collect();
        out.push_str(&format!("network = [{}]\n", ports.join(", ")));
    }
    if s.read.is_empty() && s.write.is_empty() && (s.ports.is_empty() || !network_restricted) {
        out.push_str("# nothing to add: no sandbox denial was observed\n");
    }
    out
}

fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = r#"4001 execve("/usr/local/bin/rootfence", ["rootfence", "__sandbox-exec"], 0x7ffd /* 30 vars */) = 0
4001 openat(AT_FDCWD</work>, "/root/.ssh/id_rsa", O_RDONLY|O_CLOEXEC) = -1 EACCES (Permission denied)
4001 landlock_restrict_self(3<anon_inode:[landlock-ruleset]>, 0) = 0
4001 execve("/usr/bin/node", ["node", "s.js"], 0x55 /* 9 vars */) = 0
4001 openat(AT_FDCWD</work/proj>, "data/in.txt", O_RDONLY|O_CLOEXEC) = -1 EACCES (Permission denied)
4001 openat(AT_FDCWD</work/proj>, "/opt/tool/lib/a.so", O_RDONLY|O_CLOEXEC) = -1 EACCES (Permission denied)
4002 openat(5</home/u/.cache/x>, "tmp/f", O_WRONLY|O_CREAT|O_TRUNC, 0644 <unfinished ...>
4001 stat("/etc/shadow", 0x7ff) = -1 EACCES (Permission denied)
4002 <... openat resumed>) = -1 EACCES (Permission denied)
4001 mkdir("/var/cache/thing", 0777)     = -1 EACCES (Permission denied)
4001 renameat2(AT_FDCWD</w>, "a", AT_FDCWD</w>, "b", RENAME_NOREPLACE) = -1 EACCES (Permission denied)
4001 execve("/opt/bin/helper", ["helper"], 0x1 /* 1 var */) = -1 EACCES (Permission denied)
4001 connect(7<socket:[1]>, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("1.2.3.4")}, 16) = -1 EACCES (Permission denied)
4001 bind(7<socket:[2]>, {sa_family=AF_INET6, sin6_port=htons(8080), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::", &sin6_addr), sin6_scope_id=0}, 28) = -1 EACCES (Permission denied)
4001 kill(4000, SIGTERM)                  = -1 EPERM (Operation not permitted)
4001 openat(AT_FDCWD</w>, "/tmp/odd\"name\\x\303\251\x01", O_RDONLY) = -1 EACCES (Permission denied)
4001 openat(AT_FDCWD</w>, "/ok", O_RDONLY) = 3</ok>
4001 openat(AT_FDCWD</w>, "/missing", O_RDONLY) = -1 ENOENT (No such file or directory)
"#;

    #[test]
    fn strace_log_is_read_after_the_sandbox_is_applied() {
        let f = parse_strace_log(LOG);
        assert!(f.restricted);
        let got: Vec<(String, Need, &str)> = f
            .denials
            .iter()
            .map(|d| (d.path.to_string_lossy().into_owned(), d.need, d.op.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("/work/proj/data/in.txt".into(), Need::Read, "openat"),
                ("/opt/tool/lib/a.so".into(), Need::Read, "openat"),
                ("/home/u/.cache/x/tmp/f".into(), Need::Write, "openat"),
                ("/var/cache/thing".into(), Need::Write, "mkdir"),
                ("/w/a".into(), Need::Write, "renameat2"),
                ("/w/b".into(), Need::Write, "renameat2"),
                ("/opt/bin/helper".into(), Need::Exec, "execve"),
                ("/tmp/odd\"name\\xé\u{1}".into(), Need::Read, "openat"),
            ]
        );
        assert_eq!(f.connect_ports, BTreeSet::from([443]));
        assert_eq!(f.bind_ports, BTreeSet::from([8080]));
        assert_eq!(f.signals, 1);
    }

    #[test]
    fn stderr_messages_of_node_python_and_c_tools() {
        let text = "\
Error: EACCES: permission denied, open '/srv/data/a.json'
[Error: EACCES: permission denied, mkdir '/home/u/.cache/tool'] {
PermissionError: [Errno 13] Permission denied: '/etc/app.conf'
cat: /root/secret: Permission denied
sh: 1: cannot create /var/log/x.log: Permission denied
Error: connect EACCES 127.0.0.1:5432
ls: cannot open directory '/opt/private': Permission denied
  Caused by: Permission denied (os error 13) at path \"/home/u/.local/share/uv/tools/.tmpX\"
unrelated: line
";
        let f = parse_stderr(text);
        let got: Vec<(String, Need)> = f
            .denials
            .iter()
            .map(|d| (d.path.to_string_lossy().into_owned(), d.need))
            .collect();
        assert_eq!(
            got,
            vec![
                ("/srv/data/a.json".into(), Need::Read),
                ("/home/u/.cache/tool".into(), Need::Write),
                ("/etc/app.conf".into(), Need::Read),
                ("/root/secret".into(), Need::Read),
                ("/var/log/x.log".into(), Need::Write),
                ("/opt/private".into(), Need::Read),
                ("/home/u/.local/share/uv/tools/.tmpX".into(), Need::Write),
            ]
        );
        assert_eq!(f.connect_ports, BTreeSet::from([5432]));
    }

    #[test]
    fn suggestions_collapse_drop_and_render() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("lib")).unwrap();
        for f in ["a", "b", "c"] {
            std::fs::write(base.join("lib").join(f), "").unwrap();
        }
        // Executable, or access(X_OK) rightly says the sandbox is not the cause.
        std::fs::set_permissions(
            base.join("lib/c"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        std::fs::write(base.join("one"), "").unwrap();
        std::fs::create_dir_all(base.join("cache")).unwrap();
        std::fs::create_dir_all(base.join("secret")).unwrap();
        let d = |p: PathBuf, need| Denial {
            path: p,
            need,
            op: "openat".into(),
        };
        let findings = Findings {
            denials: vec![
                d(base.join("lib/a"), Need::Read),
                d(base.join("lib/b"), Need::Read),
                d(base.join("lib/c"), Need::Exec),
                d(base.join("one"), Need::Read),
                d(base.join("cache/new/file"), Need::Write),
                d(base.join("cache/x"), Need::Read),
                d(base.join("secret/k"), Need::Read),
                d(base.join("nonexistent"), Need::Read),
                d(PathBuf::from("/dev/tty"), Need::Write),
                d(PathBuf::from("/proc/self/maps"), Need::Read),
                d(PathBuf::from("/proc/4242/cgroup"), Need::Read),
                d(PathBuf::from("relative"), Need::Read),
            ],
            connect_ports: BTreeSet::from([443]),
            ..Findings::default()
        };
        let mut spec = SandboxSpec::default();
        spec.deny.push(base.join("secret"));
        let s = suggest_in(&findings, &spec, &Context::default());
        assert_eq!(s.read, vec![base.join("lib"), base.join("one")]);
        assert_eq!(s.write, vec![base.join("cache")]);
        assert_eq!(s.ports, vec![443]);
        assert_eq!(s.left_out.len(), 5, "{:?}", s.left_out);
        let toml_text = render_toml(&s, true);
        assert!(toml_text.contains("network = [443]"), "{toml_text}");
        // The snippet is valid TOML with the policy's keys.
        let v: toml::Value = toml::from_str(&toml_text).unwrap();
        assert_eq!(v["sandbox"]["read"].as_array().unwrap().len(), 2);
        assert_eq!(
            render_toml(&Suggestion::default(), false),
            "[sandbox]\n# nothing to add: no sandbox denial was observed\n"
        );
    }

    #[test]
    fn the_working_directory_shared_temp_and_broad_directories_are_never_suggested() {
        // The bug: `openat(AT_FDCWD</tmp>, ".")` once became a suggestion of `/tmp/.`.
        let log = "\
9 landlock_restrict_self(3<anon_inode:[landlock-ruleset]>, 0) = 0
9 openat(AT_FDCWD</tmp>, \".\", O_RDONLY|O_DIRECTORY) = -1 EACCES (Permission denied)
9 openat(AT_FDCWD</work/p>, \"./a/../b.txt\", O_RDONLY) = -1 EACCES (Permission denied)
9 openat(AT_FDCWD</w>, \"/home/u\", O_RDONLY|O_DIRECTORY) = -1 EACCES (Permission denied)
9 openat(AT_FDCWD</w>, \"/home/u/.config\", O_RDONLY|O_DIRECTORY) = -1 EACCES (Permission denied)
9 openat(AT_FDCWD</w>, \"/opt\", O_RDONLY|O_DIRECTORY) = -1 EACCES (Permission denied)
9 openat(AT_FDCWD</w>, \"/work/proj\", O_RDONLY|O_DIRECTORY) = -1 EACCES (Permission denied)
";
        let f = parse_strace_log(log);
        let paths: Vec<String> = f
            .denials
            .iter()
            .map(|d| d.path.display().to_string())
            .collect();
        assert_eq!(
            paths,
            [
                "/tmp",
                "/work/p/b.txt",
                "/home/u",
                "/home/u/.config",
                "/opt",
                "/work/proj"
            ]
        );
        let ctx = Context {
            cwd: Some(PathBuf::from("/work/proj")),
            home: Some(PathBuf::from("/home/u")),
        };
        let s = suggest_in(&f, &SandboxSpec::default(), &ctx);
        assert!(s.read.is_empty() && s.write.is_empty(), "{s:?}");
        let why = |p: &str| {
            s.left_out
                .iter()
                .find(|(q, _)| q == Path::new(p))
                .map(|(_, w)| w.clone())
                .unwrap_or_else(|| panic!("{p} not left out: {:?}", s.left_out))
        };
        assert!(why("/tmp").contains("private TMPDIR"));
        assert!(why("/home/u").contains("too broad"));
        assert!(why("/home/u/.config").contains("too broad"));
        assert!(why("/opt").contains("top-level"));
        assert!(why("/work/proj").contains("working directory"));
        assert_eq!(normalized(Path::new("/tmp/.")), Path::new("/tmp"));
        assert_eq!(normalized(Path::new("/a/./b/../c")), Path::new("/a/c"));
    }

    #[test]
    fn credential_files_are_marked() {
        let s = Suggestion {
            read: vec![PathBuf::from("/home/u/.npmrc"), PathBuf::from("/opt/lib")],
            ..Suggestion::default()
        };
        let text = render_toml(&s, false);
        let marked: Vec<&str> = text.lines().filter(|l| l.contains("# may hold")).collect();
        assert_eq!(marked.len(), 1, "{text}");
        assert!(marked[0].contains(".npmrc"));
        toml::from_str::<toml::Value>(&text).unwrap();
    }

    #[test]
    fn toml_strings_escape() {
        let v: toml::Value =
            toml::from_str(&format!("k = {}", toml_string("a\"b\\c\u{1}"))).unwrap();
        assert_eq!(v["k"].as_str().unwrap(), "a\"b\\c\u{1}");
    }
}
