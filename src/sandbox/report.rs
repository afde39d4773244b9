//! The enforcement report: what the launcher actually applied, as the `session_start`
//! audit record (serde) and as a stderr summary (Display); the launcher → rootfence wire
//! format; and [`ReportReader`], which reads it after spawn.
//!
//! Wire format: JSON Lines on a pipe that is close-on-exec in the launcher. The launcher
//! writes one `report` line and execs; end of file then means the exec happened. A
//! `failed` line after it means the exec failed; a lone `refused` or `failed` line means
//! the launcher stopped before exec.

use std::io::{BufRead, Read};
use std::os::fd::OwnedFd;

use serde::{Deserialize, Serialize};

use super::profile::Rights;
use super::{Network, SandboxMode};

mod display;

/// Upper bound on what rootfence reads from the report pipe.
const MAX_REPORT_BYTES: u64 = 8 << 20;

crate::coded::coded! {
    /// How much of what was requested the kernel enforces.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Enforcement {
        /// Everything requested is enforced.
        Full => "full",
        /// Some of it is (the report's `missing` says what is not).
        Partial => "partial",
        /// Nothing is (sandbox off, or Landlock unavailable).
        None => "none",
    }
    /// The name, as the audit log spells it.
    pub fn as_str;
}

/// What the launcher applied for one server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EnforcementReport {
    /// The mode requested.
    pub mode: SandboxMode,
    /// Overall enforcement.
    pub enforcement: Enforcement,
    /// Landlock details.
    pub landlock: LandlockReport,
    /// Filesystem grants and denials.
    pub filesystem: FsReport,
    /// TCP network.
    pub network: NetworkReport,
    /// Landlock scopes.
    pub scopes: ScopeReport,
    /// Resource limits.
    pub rlimits: Vec<RlimitReport>,
    /// Whether `PR_SET_NO_NEW_PRIVS` is set.
    pub no_new_privs: bool,
    /// Environment passed to the server (names only).
    pub env: EnvReport,
    /// How descriptors beyond stdio were kept from the server.
    pub inherited_fds: String,
    /// How the server's processes are contained (a PID namespace under a minimal init, or
    /// why not), see `pidns.rs`.
    #[serde(default)]
    pub processes: String,
    /// The executable that was exec'd (after `PATH` lookup), lossy UTF-8.
    pub command: Option<String>,
    /// Everything requested but not enforced, one human-readable line each.
    pub missing: Vec<String>,
    /// Avenues the sandbox does not close even when fully enforced, one line each (e.g.
    /// pathname unix sockets before Landlock ABI 9), so the audit log never overstates.
    #[serde(default)]
    pub not_covered: Vec<String>,
    /// Paths a tool family would use that the profile deliberately did not grant, with
    /// the reason (e.g. `/proc` for a browser when rootfence runs as root).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withheld: Vec<WithheldReport>,
}

/// A path deliberately not granted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WithheldReport {
    /// The path.
    pub path: String,
    /// Why, and what to do.
    pub why: String,
}

/// Landlock status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LandlockReport {
    /// Kernel Landlock ABI, `None` when Landlock is unavailable.
    pub abi: Option<u8>,
    /// The ABI whose features rootfence requests (pinned and tested).
    pub requested_abi: u8,
    /// What `landlock_restrict_self` reported.
    pub ruleset: Enforcement,
    /// Number of rules added (paths and ports).
    pub rules: usize,
}

/// Filesystem part of the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FsReport {
    /// One entry per requested grant.
    pub grants: Vec<GrantReport>,
    /// One entry per literal denied path.
    pub deny: Vec<DenyReport>,
    /// Deny globs of the policy: matched inside the roots at launch (`carve`); enforced
    /// by the protocol layer everywhere.
    pub deny_globs: Vec<String>,
    /// What the deny and read-only globs matched inside the roots, and how each path is
    /// kept from the server (`None`: nothing to match, or the sandbox is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carve: Option<super::deny::CarveReport>,
}

/// One requested grant and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GrantReport {
    /// Path as requested.
    pub path: String,
    /// Path after resolving symlinks, when it differs.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub resolved: Option<String>,
    /// Rights requested.
    pub rights: Rights,
    /// `root`, `read`, `write`, `private-tmp` or `profile`.
    pub origin: String,
    /// Why the grant is there (profile entries: which runtime or tool needs it), empty
    /// when the origin says it all.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
    /// Outcome.
    pub status: GrantStatus,
}

/// Outcome of one grant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum GrantStatus {
    /// Granted as requested.
    Granted,
    /// Granted entry by entry around denied paths inside it.
    Carved {
        /// Entries granted individually.
        entries: usize,
        /// Directories (the grant and ancestors of denied paths) left with listing only.
        directories: usize,
    },
    /// Not granted: it does not exist or cannot be opened.
    NotFound {
        /// The error.
        error: String,
    },
    /// Not granted: it lies inside a denied path.
    Denied {
        /// The denied path that covers it.
        deny: String,
    },
}

/// One denied path and how it is enforced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DenyReport {
    /// Path as requested.
    pub path: String,
    /// How it is kept unreachable.
    pub status: DenyStatus,
    /// Precise limits (listing, later-created entries), empty when none.
    pub detail: String,
}

/// How a denied path is kept unreachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DenyStatus {
    /// It lies outside every grant: unreachable by default.
    OutsideGrants,
    /// It lies inside a grant, which was granted entry by entry around it.
    CarvedOut,
    /// Landlock is not enforcing: the deny holds at the protocol layer only.
    NotEnforced,
}

/// Network part of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NetworkReport {
    /// What was requested.
    pub requested: Network,
    /// Whether the kernel enforces it (always true for `allow`).
    pub enforced: bool,
}

/// Scopes part of the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ScopeReport {
    /// Signal scoping requested.
    pub signals_requested: bool,
    /// Signal scoping enforced.
    pub signals: bool,
    /// Abstract unix socket scoping requested.
    pub abstract_unix_sockets_requested: bool,
    /// Abstract unix socket scoping enforced.
    pub abstract_unix_sockets: bool,
}

/// One resource limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RlimitReport {
    /// `nofile`, `address_space`, `cpu_seconds` or `processes`.
    pub name: String,
    /// Value requested.
    pub requested: u64,
    /// Value set (soft = hard), when set.
    pub applied: Option<u64>,
    /// Outcome.
    pub status: RlimitStatus,
}

/// Outcome of one resource limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RlimitStatus {
    /// Set as requested.
    Applied,
    /// Set lower than requested: the inherited hard limit was already lower.
    Clamped,
    /// Set, but the kernel does not apply it here (`processes` for root).
    NotEffective,
    /// `setrlimit` failed.
    Failed,
}

/// Environment part of the report. Names only, never values (except the paths in
/// `unreachable`, which the server was told to use).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EnvReport {
    /// Names passed through.
    pub passed: Vec<String>,
    /// Names set by the sandbox (temp dir).
    pub set: Vec<String>,
    /// The inherited variables dropped, sorted by name (non-UTF-8 names shown lossily,
    /// control characters escaped).
    pub dropped_names: Vec<String>,
    /// Variables passed because the host entry or a policy names them whose value is an
    /// absolute path the sandbox does not grant: the server will fail to open it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreachable: Vec<EnvPath>,
}

/// A passed variable naming a path outside every grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EnvPath {
    /// The variable's name.
    pub name: String,
    /// Its value, a path.
    pub path: String,
}

impl EnforcementReport {
    /// The report of a session with the sandbox off.
    pub fn off() -> EnforcementReport {
        EnforcementReport {
            mode: SandboxMode::Off,
            enforcement: Enforcement::None,
            landlock: LandlockReport {
                abi: super::landlock::kernel_abi(),
                requested_abi: super::landlock::PINNED_ABI_NUMBER,
                ruleset: Enforcement::None,
                rules: 0,
            },
            filesystem: FsReport::default(),
            network: NetworkReport {
                requested: Network::Allow,
                enforced: true,
            },
            scopes: ScopeReport::default(),
            rlimits: Vec::new(),
            no_new_privs: false,
            env: EnvReport::default(),
            inherited_fds: "inherited as rootfence's (sandbox off)".into(),
            processes: "process group only (sandbox off)".into(),
            command: None,
            missing: vec!["sandbox is off: the server runs unconfined".into()],
            not_covered: Vec::new(),
            withheld: Vec::new(),
        }
    }

    /// The grant that makes `path` (canonical) reachable for the server, if any: the
    /// nearest granted ancestor-or-self, by resolved path. For roots that appear
    /// mid-session: `None` means the sandbox, fixed at launch, cannot widen to it (the
    /// protocol layer must narrow it and the audit log should say so); a `Carved` status
    /// means only part of it is reachable. With Landlock not enforcing, everything is
    /// reachable and this answers from the grants as requested.
    pub fn covering_grant(&self, path: &std::path::Path) -> Option<&GrantReport> {
        self.filesystem
            .grants
            .iter()
            .filter(|g| matches!(g.status, GrantStatus::Granted | GrantStatus::Carved { .. }))
            .filter(|g| {
                let granted = std::path::Path::new(g.resolved.as_deref().unwrap_or(&g.path));
                path.starts_with(granted)
            })
            .max_by_key(|g| g.resolved.as_deref().unwrap_or(&g.path).len())
    }
}

/// One line of the launcher → rootfence channel.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Message {
    /// Sandbox applied; exec follows.
    Report { report: Box<EnforcementReport> },
    /// Strict mode refused: something requested is not fully enforced.
    Refused { report: Box<EnforcementReport> },
    /// The launcher failed at `stage`; it exits with `code`.
    Failed {
        stage: String,
        error: String,
        code: u8,
        report: Option<Box<EnforcementReport>>,
    },
}

/// Why the server did not start as a sandboxed process.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// The launcher exited or was killed before it wrote a report.
    #[error(
        "the sandbox launcher ended without a report (it was killed, or could not read its plan); \
         its stderr has details"
    )]
    NoReport,
    /// Strict mode refused to start the server.
    #[error(
        "strict sandbox refused to start the server: {}; use --sandbox best-effort to start anyway, \
         or run on a kernel with Landlock ABI {}",
        .report.missing.join("; "),
        .report.landlock.requested_abi
    )]
    Refused {
        /// What was enforceable and what was not.
        report: Box<EnforcementReport>,
    },
    /// The launcher failed (command not found, exec denied, Landlock error).
    #[error("sandbox launcher failed at {stage}: {error}")]
    Failed {
        /// `plan`, `lookup`, `rlimits`, `landlock`, `report` or `exec`.
        stage: String,
        /// What went wrong, with a hint.
        error: String,
        /// The launcher's exit status.
        code: u8,
        /// The enforcement report, when the failure came after it.
        report: Option<Box<EnforcementReport>>,
    },
    /// The pipe could not be read.
    #[error("cannot read the sandbox report: {0}")]
    Io(#[from] std::io::Error),
    /// The launcher wrote something that is not a report.
    #[error("malformed sandbox report: {0}")]
    Malformed(String),
}

/// Where the report comes from.
#[derive(Debug)]
pub(crate) enum Channel {
    /// The launcher's pipe.
    Pipe(OwnedFd),
    /// Known without a launcher (sandbox off).
    Fixed(Box<EnforcementReport>),
}

/// Reads the enforcement report of a spawned launcher.
#[derive(Debug)]
pub struct ReportReader(pub(crate) Channel);

impl ReportReader {
    /// Reads until the launcher execs or exits, blocking the calling thread (in async
    /// code, use `spawn_blocking`).
    pub fn read_blocking(self) -> Result<EnforcementReport, LaunchError> {
        self.read_each(|_| {})
    }

    /// Like [`ReportReader::read_blocking`], but calls `on_report` as soon as the report
    /// line is complete, before end of file. For a launcher run under a tracer (`sandbox
    /// probe` with strace), which keeps its own copy of the pipe open until it exits.
    pub fn read_each(
        self,
        mut on_report: impl FnMut(&EnforcementReport),
    ) -> Result<EnforcementReport, LaunchError> {
        match self.0 {
            Channel::Fixed(r) => {
                on_report(&r);
                Ok(*r)
            }
            Channel::Pipe(fd) => {
                let file = std::fs::File::from(fd).take(MAX_REPORT_BYTES);
                parse(std::io::BufReader::new(file), on_report)
            }
        }
    }
}

/// Interprets what the launcher writes, line by line as it arrives, calling `on_report`
/// when the report line is complete.
pub(crate) fn parse(
    mut input: impl BufRead,
    mut on_report: impl FnMut(&EnforcementReport),
) -> Result<EnforcementReport, LaunchError> {
    let mut report: Option<Box<EnforcementReport>> = None;
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return report.map(|r| *r).ok_or(LaunchError::NoReport);
        }
        if line.pop() != Some(b'\n') {
            return Err(LaunchError::Malformed(
                "truncated message (the launcher died while writing)".into(),
            ));
        }
        if line.is_empty() {
            continue;
        }
        let msg: Message =
            serde_json::from_slice(&line).map_err(|e| LaunchError::Malformed(e.to_string()))?;
        match msg {
            Message::Report { report: r } => {
                if report.is_some() {
                    return Err(LaunchError::Malformed("two reports".into()));
                }
                on_report(&r);
                report = Some(r);
            }
            Message::Refused { report } => return Err(LaunchError::Refused { report }),
            Message::Failed {
                stage,
                error,
                code,
                report: r,
            } => {
                return Err(LaunchError::Failed {
                    stage,
                    error,
                    code,
                    report: r.or(report),
                });
            }
        }
    }
}

impl EnforcementReport {
    /// The report as the audit log's `session_start` carries it. Nothing is overstated: a
    /// grant that was not applied is not listed as granted, and everything the sandbox cannot
    /// cover (`not_covered`) is listed among what is missing.
    pub fn audit_record(&self) -> crate::audit::SandboxReport {
        use crate::audit::{SandboxPath, SandboxReport};
        let paths = self
            .filesystem
            .grants
            .iter()
            .filter_map(|g| {
                let access = match &g.status {
                    GrantStatus::Granted => g.rights.to_string(),
                    GrantStatus::Carved { entries, .. } => {
                        format!("{} (around denied paths, {entries} entries)", g.rights)
                    }
                    _ => return None,
                };
                let origin = if g.why.is_empty() {
                    g.origin.clone()
                } else {
                    format!("{}: {}", g.origin, g.why)
                };
                Some(SandboxPath {
                    path: g.path.clone(),
                    access,
                    origin,
                })
            })
            .collect();
        let network = match (&self.network.requested, self.network.enforced) {
            (Network::Allow, _) => "allow".to_owned(),
            (Network::Deny, true) => "deny".to_owned(),
            (Network::Ports(p), true) => format!(
                "tcp:{}",
                p.iter().map(u16::to_string).collect::<Vec<_>>().join(",")
            ),
            (_, false) => "unrestricted (not enforced)".to_owned(),
        };
        let rlimits = self
            .rlimits
            .iter()
            .filter_map(|r| r.applied.map(|v| (r.name.clone(), v)))
            .collect();
        let mut missing = self.missing.clone();
        missing.extend(self.not_covered.iter().map(|n| format!("not covered: {n}")));
        SandboxReport {
            mode: self.mode.to_string(),
            landlock_abi: self.landlock.abi.map(u32::from),
            enforcement: self.enforcement.as_str().to_owned(),
            paths,
            network,
            rlimits,
            missing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> EnforcementReport {
        let mut r = EnforcementReport::off();
        r.mode = SandboxMode::BestEffort;
        r.enforcement = Enforcement::Partial;
        r.landlock.abi = Some(3);
        r.missing = vec!["network restriction (needs Landlock ABI 4, Linux 6.7)".into()];
        r.network = NetworkReport {
            requested: Network::Ports(vec![443]),
            enforced: false,
        };
        r
    }

    fn read(bytes: &[u8]) -> Result<EnforcementReport, LaunchError> {
        parse(bytes, |_| {})
    }

    fn line(m: &Message) -> Vec<u8> {
        let mut v = serde_json::to_vec(m).unwrap();
        v.push(b'\n');
        v
    }

    #[test]
    fn wire_outcomes() {
        let r = Box::new(sample());
        // Report then EOF: exec happened.
        let ok = line(&Message::Report { report: r.clone() });
        assert_eq!(read(&ok).unwrap(), *r);
        // Report then failure: exec failed, the report is kept.
        let mut both = ok.clone();
        both.extend(line(&Message::Failed {
            stage: "exec".into(),
            error: "permission denied".into(),
            code: 126,
            report: None,
        }));
        match read(&both).unwrap_err() {
            LaunchError::Failed {
                code,
                report: Some(_),
                ..
            } => assert_eq!(code, 126),
            e => panic!("{e:?}"),
        }
        // Refused.
        let refused = line(&Message::Refused { report: r.clone() });
        let e = read(&refused).unwrap_err();
        assert!(e.to_string().contains("needs Landlock ABI 4"), "{e}");
        // Nothing, truncated, garbage, two reports.
        assert!(matches!(read(b""), Err(LaunchError::NoReport)));
        assert!(matches!(
            read(&ok[..ok.len() - 5]),
            Err(LaunchError::Malformed(_))
        ));
        assert!(matches!(read(b"{}\n"), Err(LaunchError::Malformed(_))));
        let mut twice = ok.clone();
        twice.extend(ok);
        assert!(matches!(read(&twice), Err(LaunchError::Malformed(_))));
    }

    #[test]
    fn summary_says_what_is_missing() {
        let text = sample().to_string();
        assert!(text.contains("PARTIALLY enforced"), "{text}");
        assert!(text.contains("landlock ABI 3"), "{text}");
        assert!(text.contains("ports 443 (NOT enforced)"), "{text}");
        assert!(text.contains("missing: network restriction"), "{text}");
        assert_eq!(
            EnforcementReport::off().to_string(),
            "sandbox: off; the server runs unconfined"
        );
    }

    #[test]
    fn covering_grant_finds_the_nearest_granted_ancestor() {
        let mut r = sample();
        let g = |path: &str, resolved: Option<&str>, status: GrantStatus| GrantReport {
            path: path.into(),
            resolved: resolved.map(str::to_owned),
            rights: Rights::ReadWrite,
            origin: "root".into(),
            why: String::new(),
            status,
        };
        r.filesystem.grants = vec![
            g("/work", None, GrantStatus::Granted),
            g(
                "/link/proj",
                Some("/work/proj"),
                GrantStatus::Carved {
                    entries: 3,
                    directories: 1,
                },
            ),
            g("/gone", None, GrantStatus::NotFound { error: "x".into() }),
        ];
        let find = |p: &str| {
            r.covering_grant(std::path::Path::new(p))
                .map(|g| g.path.as_str())
        };
        assert_eq!(find("/work/other"), Some("/work"));
        assert_eq!(find("/work/proj/src"), Some("/link/proj"));
        assert_eq!(
            find("/workshop"),
            None,
            "component-wise, not by string prefix"
        );
        assert_eq!(find("/gone/x"), None);
        assert_eq!(find("/elsewhere"), None);
    }

    #[test]
    fn the_summary_names_every_grant() {
        let mut r = sample();
        let g = |path: &str, rights, origin: &str, why: &str| GrantReport {
            path: path.into(),
            resolved: None,
            rights,
            origin: origin.into(),
            why: why.into(),
            status: GrantStatus::Granted,
        };
        r.filesystem.grants = vec![
            g(
                "/usr",
                Rights::ReadExec,
                "profile",
                "system libraries and binaries",
            ),
            g(
                "/bin",
                Rights::ReadExec,
                "profile",
                "system libraries and binaries",
            ),
            g(
                "/etc/hosts",
                Rights::Read,
                "profile",
                "system configuration programs read to run",
            ),
            g(
                "/etc/passwd",
                Rights::Read,
                "profile",
                "system configuration programs read to run",
            ),
            g(
                "/w/srv",
                Rights::ReadExec,
                "profile",
                "project of the script /w/srv/index.js",
            ),
            g("/w/proj", Rights::ReadWrite, "root", ""),
            g("/d/memory.json", Rights::ReadWrite, "write", ""),
        ];
        r.env.dropped_names = vec!["AWS_SECRET_ACCESS_KEY".into(), "SSH_AUTH_SOCK".into()];
        r.env.unreachable = vec![EnvPath {
            name: "MEMORY_FILE_PATH".into(),
            path: "/x/m.json".into(),
        }];
        let text = r.to_string();
        for want in [
            "grants: /w/proj (read-write, root), /d/memory.json (read-write, write)",
            "profile: /w/srv (read-exec, project of the script /w/srv/index.js)",
            "system: read-exec /usr /bin; read /etc/{hosts,passwd}",
            "2 dropped: AWS_SECRET_ACCESS_KEY, SSH_AUTH_SOCK",
            "env MEMORY_FILE_PATH names /x/m.json, which the sandbox does not grant",
        ] {
            assert!(text.contains(want), "missing {want:?} in:\n{text}");
        }
        let rec = r.audit_record();
        let project = rec.paths.iter().find(|p| p.path == "/w/srv").unwrap();
        assert_eq!(
            project.origin,
            "profile: project of the script /w/srv/index.js"
        );
        assert_eq!(rec.paths.len(), 7);
    }

    #[test]
    fn report_serializes_for_the_audit_log() {
        let v = serde_json::to_value(sample()).unwrap();
        assert_eq!(v["mode"], "best-effort");
        assert_eq!(v["enforcement"], "partial");
        assert_eq!(v["network"]["requested"]["ports"][0], 443);
    }
}
