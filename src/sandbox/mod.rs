//! Confinement of the wrapped server: Landlock rules derived from the roots and policy,
//! applied in the child only, and an honest enforcement report (issue 7).
//!
//! # How it works
//!
//! rootfence never restricts itself. [`prepare`] builds a [`Command`] that re-executes the
//! rootfence binary as a small single-threaded launcher (`rootfence __sandbox-exec ...`).
//! The launcher reads a launch plan (`plan.rs`) from an inherited memfd, then
//! clears the environment down to an allow-list, sets resource limits and
//! `no_new_privs`, marks every inherited descriptor above stderr close-on-exec, applies
//! Landlock (filesystem, TCP network and scopes), writes its [`EnforcementReport`] to a
//! close-on-exec pipe and execs the server. The parent reads the report through
//! [`ReportReader`]: end of file right after the report means the exec happened.
//!
//! # What this module does not own
//!
//! Policy parsing (the `[sandbox]` table is compiled in `policy`; `policy::server_spec` maps
//! it to a [`SandboxSpec`]; this module never imports the policy), the relay's stdio, process group and parent-death signal (the caller
//! adds them to [`Prepared::command`]), and the `session_start` audit record (the caller
//! serializes the [`EnforcementReport`]).
//!
//! # Layout
//!
//! - `profile.rs`: the documented default profile (system, interpreters, caches, devices).
//! - `runtime.rs`: runtime discovery: the command followed through launchers, shims and
//!   symlinks to its programs and installs, each grant with its reason.
//! - `plan.rs`: spec + profile → the serialized plan the launcher executes.
//! - `scan.rs`: the bounded scan of the roots for deny and read-only globs.
//! - `deny.rs`: what the scan found, covered in a private mount namespace (`mounts.rs`)
//!   or handed to the Landlock carve-out; its part of the report.
//! - `landlock.rs`: ruleset construction with an explicit compatibility level, and the
//!   carve-out of denied and read-only paths inside granted trees.
//! - `launcher.rs`: the launcher process itself.
//! - `fds.rs`: unsafe code: descriptor inheritance before exec and the fd sweep.
//! - `pidns.rs`: the server's PID namespace and its minimal init (forks, hence unsafe).
//! - `report.rs`: the enforcement report, its wire format and its reader.
//! - `server.rs`: a host entry's `--env`/`--read`/`--write` and the `--env` name check (the
//!   spec merging them with the policy is `policy::server_spec`).
//! - `probe.rs`: `rootfence sandbox probe`: strace log and stderr analysis.

pub mod catalogue;
mod deny;
mod fds;
pub(crate) mod gitdir;
mod landlock;
pub mod launcher;
mod mounts;
mod pidns;
mod placeholder;
mod plan;
pub mod probe;
mod profile;
mod report;
mod runtime;
pub mod scan;
mod server;

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

pub use deny::{CarvedBy, CarvedKind};
pub use mounts::MOUNTS_ENV;
pub use pidns::PIDNS_ENV;
pub use placeholder::{Placeholders, mount_namespace_likely};
pub use profile::{Family, is_executable_file};
pub use report::{
    DenyStatus, Enforcement, EnforcementReport, GrantStatus, LaunchError, ReportReader,
};
pub use server::{EnvNameError, ServerGrants, check_env_name};

/// The hidden first argument under which rootfence runs as the sandbox launcher.
pub const LAUNCHER_ARG: &str = "__sandbox-exec";

/// Exit status of the launcher when `strict` mode refused to start the server because a
/// requested restriction could not be fully enforced. Distinct from the server's own codes
/// in the usual range and from the shell's 126/127.
pub const EXIT_REFUSED: u8 = 78;
/// Exit status of the launcher when the command was not found on the allow-listed `PATH`.
pub const EXIT_NOT_FOUND: u8 = 127;
/// Exit status of the launcher when `execve` of the server failed (for example because the
/// sandbox does not grant execute on it).
pub const EXIT_EXEC_FAILED: u8 = 126;
/// Exit status of the launcher when it could not set up the sandbox at all (bad plan,
/// descriptor or Landlock syscall error).
pub const EXIT_LAUNCHER_ERROR: u8 = 125;

crate::coded::coded! {
    /// How hard the sandbox is applied.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum SandboxMode {
        /// No confinement: the server is started directly with rootfence's environment.
        Off => "off",
        /// Apply everything the kernel supports and report exactly what is missing.
        BestEffort => "best-effort",
        /// Refuse to start unless every requested restriction is fully enforced.
        Strict => "strict",
    }
    /// The command-line word (`--sandbox`, `--mode`), as the policy spells it.
    pub fn as_str;
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The command-line word (`--sandbox`, `--mode`), as [`SandboxMode`] displays it.
impl std::str::FromStr for SandboxMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let found = SandboxMode::ALL.iter().find(|m| m.as_str() == s);
        found
            .copied()
            .ok_or_else(|| format!("unknown sandbox mode `{s}`; use best-effort, strict or off"))
    }
}

/// Filesystem access granted to a root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// Read files, list directories and execute files beneath the root.
    ReadOnly,
    /// Everything Landlock handles: read, write, create, remove, rename, truncate.
    ReadWrite,
}

/// TCP network stance of the server (Landlock ABI 4 and later).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Network {
    /// No network restriction.
    Allow,
    /// TCP connect and bind only to these ports.
    Ports(Vec<u16>),
    /// No TCP connect or bind at all.
    Deny,
}

/// Landlock scopes (ABI 6 and later). Both are on by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Scopes {
    /// No signals to processes outside the sandbox (rootfence itself included).
    pub signals: bool,
    /// No connecting to abstract unix sockets created outside the sandbox.
    pub abstract_unix_sockets: bool,
}

impl Default for Scopes {
    fn default() -> Self {
        Scopes {
            signals: true,
            abstract_unix_sockets: true,
        }
    }
}

/// Resource limits for the server; `None` leaves a limit as inherited. Field names follow
/// the policy's `[sandbox.rlimits]` keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Rlimits {
    /// `RLIMIT_NOFILE`: open files.
    pub nofile: Option<u64>,
    /// `RLIMIT_AS`: address space in bytes.
    pub address_space: Option<u64>,
    /// `RLIMIT_CPU`: CPU seconds.
    pub cpu_seconds: Option<u64>,
    /// `RLIMIT_NPROC`: processes of the user (the kernel counts every process of the real
    /// uid, not only the server's, and does not apply it to root).
    pub processes: Option<u64>,
}

/// A root the server may reach, with its access.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SandboxRoot {
    /// Absolute path of the root.
    pub path: PathBuf,
    /// Access granted beneath it.
    pub access: Access,
}

/// Everything the sandbox needs to confine one server: the caller maps the compiled policy
/// and the command line onto it. Paths must be absolute.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SandboxSpec {
    /// How hard the sandbox is applied.
    pub mode: SandboxMode,
    /// The effective roots known at launch (static policy or `--root` roots).
    pub roots: Vec<SandboxRoot>,
    /// Extra paths the server may read (and execute).
    pub read: Vec<PathBuf>,
    /// Extra paths the server may read and write.
    pub write: Vec<PathBuf>,
    /// Literal paths denied by the policy: kept unreachable even inside a granted root, by
    /// granting the root's other entries individually (see `docs/sandbox.md`).
    pub deny: Vec<PathBuf>,
    /// Deny globs of the policy. Their matches inside the roots are found at launch and
    /// hidden from the server (a private mount namespace, or the Landlock carve-out; see
    /// `docs/sandbox.md`); elsewhere they are enforced by the protocol layer.
    pub deny_globs: Vec<String>,
    /// Read-only globs (the policy's `sandbox.read_only_paths`): their matches inside
    /// writable roots are found at launch and made read-only to the server.
    pub read_only_paths: Vec<String>,
    /// Bounds of the scan of the roots for `deny_globs` and `read_only_paths`.
    pub scan_limits: scan::Limits,
    /// TCP network stance.
    pub network: Network,
    /// Landlock scopes.
    pub scopes: Scopes,
    /// Resource limits.
    pub rlimits: Rlimits,
    /// Environment variables passed to the server on top of the profile's baseline: exact
    /// names, or a prefix ending in `*` (e.g. `LC_*`).
    pub env: Vec<String>,
    /// Whether the documented default profile (system, interpreter, caches, devices) is
    /// granted. Without it the server gets only the roots and the extra paths.
    pub default_profile: bool,
    /// Whether a private temporary directory is created for the session, granted
    /// read-write, exported as `TMPDIR`, `TMP` and `TEMP`, and removed when the
    /// [`SandboxSession`] is dropped.
    pub private_tmp: bool,
}

impl SandboxSpec {
    /// A spec with the given mode, the default profile, a private temp dir, network
    /// allowed, both scopes on, the default read-only paths, no roots and no limits.
    pub fn new(mode: SandboxMode) -> Self {
        SandboxSpec {
            mode,
            roots: Vec::new(),
            read: Vec::new(),
            write: Vec::new(),
            deny: Vec::new(),
            deny_globs: Vec::new(),
            read_only_paths: scan::DEFAULT_READ_ONLY_PATHS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            scan_limits: scan::Limits::default(),
            network: Network::Allow,
            scopes: Scopes::default(),
            rlimits: Rlimits::default(),
            env: Vec::new(),
            default_profile: true,
            private_tmp: true,
        }
    }

    /// Adds a policy deny pattern: a literal absolute path goes to [`SandboxSpec::deny`]
    /// (carved out of every grant), anything with glob syntax to
    /// [`SandboxSpec::deny_globs`] (its matches inside the roots are hidden at launch).
    pub fn add_deny_pattern(&mut self, pattern: &str) {
        let is_glob = pattern.contains(['*', '?', '[', ']', '{', '}']);
        if !is_glob && Path::new(pattern).is_absolute() {
            self.deny.push(PathBuf::from(pattern));
        } else {
            self.deny_globs.push(pattern.to_owned());
        }
    }
}

impl Default for SandboxSpec {
    fn default() -> Self {
        SandboxSpec::new(SandboxMode::BestEffort)
    }
}

/// Errors while preparing the launcher command (in rootfence, before anything runs).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The server command is empty.
    #[error("no server command given; put it after `--`")]
    EmptyCommand,
    /// A path in the spec is relative.
    #[error("sandbox path '{}' is not absolute; give it as an absolute path", .0.display())]
    RelativePath(PathBuf),
    /// The launcher executable could not be found.
    #[error("cannot find the rootfence executable to use as the sandbox launcher: {0}")]
    CurrentExe(#[source] std::io::Error),
    /// The private temp dir could not be created.
    #[error("cannot create the private temp dir under '{}': {source}; set TMPDIR to a writable directory", dir.display())]
    PrivateTmp {
        /// Where it was attempted.
        dir: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A pipe or memfd could not be created.
    #[error("cannot set up the launcher channel ({what}): {source}")]
    Channel {
        /// Which step.
        what: &'static str,
        /// Why it failed.
        source: std::io::Error,
    },
}

/// The launcher command for one server, and the session state that must outlive it.
#[derive(Debug)]
#[non_exhaustive]
pub struct Prepared {
    /// The command to spawn. The caller adds stdio, a process group and a parent-death
    /// signal, then spawns it (`tokio::process::Command::from` keeps the pre-exec hook).
    /// Do not clear its environment: the launcher filters it through the allow-list.
    pub command: Command,
    /// Session state: the report channel and the private temp dir.
    pub session: SandboxSession,
}

/// State of one sandboxed session. Keep it alive until the server has exited: dropping it
/// removes the private temp dir.
#[derive(Debug)]
pub struct SandboxSession {
    report: Option<ReportReader>,
    /// The launcher's ends (plan memfd, report pipe write end), closed after spawn so the
    /// report pipe reaches end of file when the launcher execs or dies.
    child_ends: Vec<OwnedFd>,
    /// Held for its `Drop`, which removes the private temp dir.
    _private_tmp: Option<tempfile::TempDir>,
}

impl SandboxSession {
    /// Call once, right after the command was spawned: closes rootfence's copies of the
    /// launcher's descriptors and returns the reader of the enforcement report. Returns
    /// `None` on a second call.
    pub fn take_report_reader(&mut self) -> Option<ReportReader> {
        self.child_ends.clear();
        self.report.take()
    }

    /// The raw numbers of the launcher's descriptors, for wrapping the command.
    pub(crate) fn child_fds(&self) -> [std::os::fd::RawFd; 2] {
        std::array::from_fn(|i| self.child_ends.get(i).map_or(-1, |f| f.as_raw_fd()))
    }
}

/// The kernel's Landlock ABI version, or `None` when Landlock is not available (not built
/// in, or not enabled at boot). Has no side effect.
pub fn landlock_abi() -> Option<u8> {
    landlock::kernel_abi()
}

/// Prepares the launcher command for `argv` with this spec, using the running executable
/// (rootfence) as the launcher.
///
/// The launcher is started as `/proc/self/exe`: in the forked child that is the very file
/// rootfence runs from, even if it was replaced or deleted since (an upgrade mid-session),
/// so launcher and plan always come from the same build. `argv[0]` stays the executable's
/// path for `ps`.
pub fn prepare(spec: &SandboxSpec, argv: &[OsString]) -> Result<Prepared, SandboxError> {
    let exe = std::env::current_exe().map_err(SandboxError::CurrentExe)?;
    let proc_exe = Path::new("/proc/self/exe");
    if spec.mode == SandboxMode::Off || !proc_exe.exists() {
        return prepare_with_launcher(spec, argv, &exe);
    }
    let mut prepared = prepare_with_launcher(spec, argv, proc_exe)?;
    std::os::unix::process::CommandExt::arg0(&mut prepared.command, &exe);
    Ok(prepared)
}

/// Like [`prepare`], with an explicit path to the rootfence executable (for tests and
/// benchmarks, whose own executable is not rootfence).
pub fn prepare_with_launcher(
    spec: &SandboxSpec,
    argv: &[OsString],
    launcher: &Path,
) -> Result<Prepared, SandboxError> {
    let Some(program) = argv.first() else {
        return Err(SandboxError::EmptyCommand);
    };
    if spec.mode == SandboxMode::Off {
        let mut command = Command::new(program);
        command.args(&argv[1..]);
        return Ok(Prepared {
            command,
            session: SandboxSession {
                report: Some(ReportReader(report::Channel::Fixed(Box::new(
                    EnforcementReport::off(),
                )))),
                child_ends: Vec::new(),
                _private_tmp: None,
            },
        });
    }

    let private_tmp = spec.private_tmp.then(private_tmp_dir).transpose()?;
    let env_now: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let plan = plan::build(spec, argv, private_tmp.as_ref().map(|t| t.path()), &env_now)?;
    let channel = fds::LauncherChannel::new(&plan)?;
    let session = SandboxSession {
        report: Some(ReportReader(report::Channel::Pipe(channel.report_read))),
        child_ends: vec![channel.plan_fd, channel.report_write],
        _private_tmp: private_tmp,
    };
    let [plan_fd, report_fd] = session.child_fds();
    let mut command = Command::new(launcher);
    command
        .arg(LAUNCHER_ARG)
        .arg(plan_fd.to_string())
        .arg(report_fd.to_string())
        .arg("--")
        .args(argv);
    fds::inherit_in_child(&mut command, [plan_fd, report_fd]);
    Ok(Prepared { command, session })
}

/// Creates the session's private temp dir as `$TMPDIR/rootfence-sandbox-<uid>/<pid>-XXXX`.
///
/// The per-user parent (mode 0700, checked to be ours and not a symlink, since `$TMPDIR`
/// is usually shared) lets each start remove what sessions killed with SIGKILL left
/// behind: entries whose pid no longer exists. A live process in another pid namespace
/// sharing the same `/tmp` and uid could lose its temp dir; when the parent cannot be
/// used, the dir is created directly in `$TMPDIR` and nothing is swept.
fn private_tmp_dir() -> Result<tempfile::TempDir, SandboxError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let base = std::env::temp_dir();
    let uid = nix::unistd::geteuid();
    let parent = base.join(format!("rootfence-sandbox-{uid}"));
    let created = std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&parent)
        .is_ok();
    let usable = created
        || std::fs::symlink_metadata(&parent)
            .is_ok_and(|m| m.is_dir() && m.uid() == uid.as_raw() && m.mode() & 0o077 == 0);
    let (dir, prefix) = if usable {
        sweep_stale(&parent);
        (parent, format!("{}-", std::process::id()))
    } else {
        (base, "rootfence-sandbox-".to_owned())
    };
    tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(&dir)
        .map_err(|source| SandboxError::PrivateTmp { dir, source })
}

/// Removes session dirs (`<pid>-...`) whose process is gone.
fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.split_once('-'))
            .and_then(|(p, _)| p.parse::<i32>().ok())
        else {
            continue;
        };
        if pid <= 0 || pid == std::process::id() as i32 {
            continue;
        }
        let gone = matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::Error::ESRCH)
        );
        if gone && entry.file_type().is_ok_and(|t| t.is_dir()) {
            // remove_dir_all does not follow symlinks inside the tree.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_tmp_dirs_of_dead_sessions_are_swept() {
        let first = private_tmp_dir().unwrap();
        let parent = first.path().parent().unwrap().to_owned();
        assert!(
            parent
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("rootfence-sandbox-")
        );
        // A session of a process that has exited (reaped, so its pid is free).
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        dead.wait().unwrap();
        let stale = parent.join(format!("{dead_pid}-stale"));
        std::fs::create_dir_all(stale.join("inner")).unwrap();
        let second = private_tmp_dir().unwrap();
        assert!(!stale.exists(), "stale session dir left behind");
        assert!(first.path().exists(), "a live session's dir must stay");
        drop(second);
        drop(first);
    }

    #[test]
    fn deny_patterns_split_literal_from_glob() {
        let mut spec = SandboxSpec::default();
        for p in [
            "/home/u/proj/.env",
            "**/.env",
            "/home/u/*.pem",
            "relative/path",
            "/a/b[1]",
        ] {
            spec.add_deny_pattern(p);
        }
        assert_eq!(spec.deny, vec![PathBuf::from("/home/u/proj/.env")]);
        assert_eq!(
            spec.deny_globs,
            vec!["**/.env", "/home/u/*.pem", "relative/path", "/a/b[1]"]
        );
    }

    #[test]
    fn empty_command_is_an_error() {
        let err = prepare_with_launcher(&SandboxSpec::default(), &[], Path::new("/bin/true"))
            .unwrap_err();
        assert!(matches!(err, SandboxError::EmptyCommand));
    }

    #[test]
    fn off_mode_runs_the_command_directly() {
        let spec = SandboxSpec::new(SandboxMode::Off);
        let mut p = prepare_with_launcher(
            &spec,
            &["echo".into(), "hi".into()],
            Path::new("/nonexistent"),
        )
        .unwrap();
        assert_eq!(p.command.get_program(), "echo");
        let report = p
            .session
            .take_report_reader()
            .unwrap()
            .read_blocking()
            .unwrap();
        assert_eq!(report.mode, SandboxMode::Off);
        assert_eq!(report.enforcement, Enforcement::None);
        assert!(p.session.take_report_reader().is_none());
    }
}
