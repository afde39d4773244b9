//! The tamper-evident audit log: event schema, the hash-chained JSON Lines writer, and the
//! `verify`, `summary` and `show` readers.
//!
//! Owned by issue 5. The record format is specified in `docs/audit-schema.md` (and
//! `docs/audit-schema.json`); this module is one implementation of that document, and the
//! readers here never assume more than the document promises.
//!
//! # Layout
//!
//! - [`event`]: the typed events (what may be logged at all: paths and URIs, never file
//!   contents or tool argument values) and the escaping of every string that reaches a line.
//! - `chain`: the record envelope, the hash chain and the targeted envelope parser that
//!   `verify` uses for speed.
//! - `writer`: [`AuditLog`] and its cheap handle [`Auditor`]; one writer thread per log fed
//!   through a bounded queue (group commit), receipts to wait for before acting.
//! - `sink`: the file side of the writer: the lock, one `write()` per batch, rotation,
//!   crash recovery and the fsync policy; `retain`: which rotated files retention removes.
//! - [`checkpoint`]: signed checkpoints of the chain head, their file, and the keys.
//! - [`syslog`]: the syslog sink (RFC 5424 over UDP, TCP, unix socket), fed by the writer;
//!   [`ocsf`]: the record mapped to OCSF field names.
//! - `principal`: who a session acts for (token, client address, HTTP session, or the
//!   host's claimed `clientInfo`).
//! - `repeat`: repeated protocol errors counted per interval instead of logged each.
//! - `verify`, `summary`, `show`, `report`: the readers behind `rootfence audit ...`;
//!   `filter`: the record filters they share.
//! - `time`: RFC 3339 formatting and parsing (hand-written: two small functions do not
//!   justify a date-time crate).
//!
//! # How the relay uses it
//!
//! ```no_run
//! use rootfence::audit::{AuditConfig, AuditLog, Event, SessionEnd, SessionStart};
//! # fn main() -> Result<(), rootfence::audit::AuditError> {
//! let cfg = AuditConfig::new(rootfence::audit::default_log_path()?);
//! let start = SessionStart::new(&["server".into()], std::path::Path::new("/"));
//! let log = AuditLog::open(cfg, start)?;
//! let auditor = log.handle(); // Clone + Send + Sync, one per task
//! // auditor.record(Event::Decision(..))?;                 // hot path: enqueue only
//! // let r = auditor.submit(Event::Decision(..), false)?;  // enqueue, keep the receipt
//! // auditor.durable(r).await?;                            // wait until written (+fsync)
//! // tokio::select! { err = auditor.failure() => .., .. }  // stop the session on failure
//! log.close(SessionEnd::default())?;
//! # Ok(()) }
//! ```

pub(crate) mod chain;
pub mod checkpoint;
pub mod event;
mod filter;
pub mod ocsf;
mod principal;
mod read;
mod repeat;
mod report;
mod retain;
mod show;
mod sink;
mod summary;
pub mod syslog;
pub(crate) mod time;
mod verify;
mod writer;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use event::{
    Action, AuditUri, Counts, Decision, DecisionRef, DecisionSummary, DirCount, Direction,
    DroppedRoot, EndCause, Event, Initialized, NarrowedRoot, PeerInfo, PolicyFile, PolicyReload,
    ProtocolError, ProtocolErrorKind, RootsUpdate, RpcId, SandboxPath, SandboxReport, ServerStart,
    SessionEnd, SessionStart, Verdict,
};
pub use filter::Filter;
pub use principal::Principal;
pub use report::{ReportOptions, report_html};
pub use show::{Format, ShowFilter, show};
pub use summary::{SummaryOptions, summarize};
#[cfg(feature = "otel")]
pub(crate) use time::parse_rfc3339 as parse_ts_micros;
pub use time::parse_time_arg;
pub use verify::{Incomplete, VerifyOptions, VerifyReport, order_files, verify_files_with};
pub use writer::{AuditLog, Auditor, Receipt};

/// The schema version written in every record's `v` field. Readers accept records of this
/// version; a breaking change to the format bumps it (adding an optional field does not).
pub const SCHEMA_VERSION: u32 = 1;

/// File name of the log inside the default state directory.
pub const DEFAULT_FILE_NAME: &str = "audit.jsonl";

/// When the writer calls `fdatasync` on the log.
///
/// Every record reaches the kernel (and so survives a crash of rootfence) at once when
/// something waits for it, else within 50 ms; this policy is about surviving a
/// crash of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FsyncPolicy {
    /// Before any record is acknowledged.
    Always,
    /// Before a denial, a `session_start` or a `session_end` record is acknowledged
    /// (the default: the records a reviewer needs most are never only in the page cache).
    #[default]
    Denials,
    /// At most this long after a record was written.
    Interval(Duration),
    /// Never; the kernel writes back when it likes.
    Never,
}

/// What happens when a record cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// Fail closed: `record` returns the error and [`Auditor::failure`] resolves, so the relay
    /// stops the session rather than go on unaudited (the default).
    #[default]
    Stop,
    /// Warn on stderr and keep the session going; later records are still attempted.
    Continue,
}

/// How to open an audit log.
#[derive(Debug, Clone)]
pub struct AuditConfig {
    /// The active log file. Rotated files sit beside it as `<name>.<N>` (N = 1, 2, ...,
    /// oldest first); a lock file `.<name>.lock` serialises writers.
    pub path: PathBuf,
    /// When to fsync.
    pub fsync: FsyncPolicy,
    /// Rotate when the active file would grow past this many bytes (`None`: never).
    pub rotate_bytes: Option<u64>,
    /// Fail closed or go on when writing fails.
    pub on_failure: OnFailure,
    /// Log `allow` decisions too (they are still counted in `session_end` when not logged).
    pub log_allowed: bool,
    /// At each rotation, keep at most this many rotated files (the oldest go first).
    pub retain_files: Option<u64>,
    /// At each rotation, keep rotated files of at most this many bytes in all.
    pub retain_bytes: Option<u64>,
    /// Signed checkpoints of the chain head (`None`: none are written).
    pub checkpoint: Option<checkpoint::CheckpointConfig>,
    /// A copy of every record (and checkpoint) to syslog (`None`: none).
    pub syslog: Option<syslog::SyslogConfig>,
    /// Also hands every record written to this function, on the writer's thread (whole
    /// lines, after they are in the file): how telemetry exports the records.
    pub tee: Option<LineTee>,
}

/// A function the audit writer's thread hands every batch of records it wrote to (whole
/// `\n`-terminated lines, as in the file). It must return at once: it runs between writes.
#[derive(Clone)]
pub struct LineTee(std::sync::Arc<TeeFn>);

type TeeFn = dyn Fn(&[u8]) + Send + Sync;

impl LineTee {
    /// Wraps `f`.
    pub fn new(f: impl Fn(&[u8]) + Send + Sync + 'static) -> LineTee {
        LineTee(std::sync::Arc::new(f))
    }
}

impl std::fmt::Debug for LineTee {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LineTee(..)")
    }
}

impl AuditConfig {
    /// The defaults: fsync denials, rotate at 64 MiB, keep 10 rotated files, fail closed,
    /// log allowed decisions.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            fsync: FsyncPolicy::default(),
            rotate_bytes: Some(DEFAULT_ROTATE_BYTES),
            on_failure: OnFailure::default(),
            log_allowed: true,
            retain_files: Some(DEFAULT_RETAIN_FILES),
            retain_bytes: None,
            checkpoint: None,
            syslog: None,
            tee: None,
        }
    }
}

/// Default rotation size: large enough that rotation is rare, small enough that one file
/// opens quickly in an editor.
pub const DEFAULT_ROTATE_BYTES: u64 = 64 * 1024 * 1024;

/// Rotated files kept by default: with the default rotation size, at most 640 MiB of them
/// plus the active file, so a log cannot fill the disk.
pub const DEFAULT_RETAIN_FILES: u64 = 10;

/// How allowed entries of a list page (`resources/list`, `resources/templates/list`) are
/// logged, when allowed decisions are logged at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AllowedRecords {
    /// One `decision` record per allowed entry.
    Each,
    /// One `decision_summary` record per page: counts by reason and rule, and the page's
    /// directories (the default). Denied entries always have their own records.
    #[default]
    Summary,
}

/// An audit log error. Cheap to clone, so the writer's failure can be handed to every task.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The log (or its directory or lock file) could not be opened or created.
    #[error(
        "cannot open audit log {}: {source}; check that the directory is writable or choose \
         another file with --audit-log",
        path.display()
    )]
    Open {
        /// The file that failed.
        path: PathBuf,
        /// The OS error.
        source: Arc<io::Error>,
    },
    /// A record could not be written, synced or rotated.
    #[error(
        "cannot write audit log {}: {source}; free disk space or fix permissions (with \
         audit.on_failure = \"stop\", the session stops rather than run unaudited)",
        path.display()
    )]
    Write {
        /// The file that failed.
        path: PathBuf,
        /// The OS error.
        source: Arc<io::Error>,
    },
    /// The existing log does not end with a rootfence record, so its chain cannot be
    /// continued. Nothing was written to it.
    #[error(
        "audit log {} cannot be continued: {detail}; move it aside (it is evidence) or choose \
         another file with --audit-log",
        path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// Neither `$XDG_STATE_HOME` nor `$HOME` is set to an absolute path.
    #[error(
        "cannot find a state directory for the audit log: neither XDG_STATE_HOME nor HOME is an \
         absolute path; give --audit-log <file>"
    )]
    NoStateDir,
    /// `record` was given an event that only the log itself writes.
    #[error("the {0} event is written by the audit log itself and cannot be recorded")]
    Reserved(&'static str),
    /// The log was closed (or its writer thread ended) before the record was queued.
    #[error("the audit log is closed; no more records can be written")]
    Closed,
}

impl AuditError {
    pub(crate) fn open(path: &Path, e: io::Error) -> Self {
        Self::Open {
            path: path.to_path_buf(),
            source: Arc::new(e),
        }
    }

    pub(crate) fn write(path: &Path, e: io::Error) -> Self {
        Self::Write {
            path: path.to_path_buf(),
            source: Arc::new(e),
        }
    }
}

/// The directory `path` is in: its parent, or `.` for a bare file name.
pub(crate) fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The default log file: `$XDG_STATE_HOME/rootfence/audit.jsonl`, or
/// `$HOME/.local/state/rootfence/audit.jsonl` when `XDG_STATE_HOME` is unset or not absolute
/// (as the XDG base directory spec says). The directory is created by [`AuditLog::open`].
///
/// Several rootfence processes (one per wrapped server) may share this file: writers take a
/// lock per batch and continue one chain.
pub fn default_log_path() -> Result<PathBuf, AuditError> {
    default_log_path_from(|k| std::env::var_os(k))
}

fn default_log_path_from(
    get: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<PathBuf, AuditError> {
    let abs = |k: &str| get(k).map(PathBuf::from).filter(|p| p.is_absolute());
    let base = match abs("XDG_STATE_HOME") {
        Some(p) => p,
        None => abs("HOME")
            .ok_or(AuditError::NoStateDir)?
            .join(".local")
            .join("state"),
    };
    Ok(base.join("rootfence").join(DEFAULT_FILE_NAME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_path_follows_xdg_then_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>);
        let cases: &[Case] = &[
            (
                &[("XDG_STATE_HOME", "/x/state"), ("HOME", "/home/u")],
                Some("/x/state/rootfence/audit.jsonl"),
            ),
            (
                &[("HOME", "/home/u")],
                Some("/home/u/.local/state/rootfence/audit.jsonl"),
            ),
            // A relative XDG_STATE_HOME is ignored, as the spec requires.
            (
                &[("XDG_STATE_HOME", "rel"), ("HOME", "/home/u")],
                Some("/home/u/.local/state/rootfence/audit.jsonl"),
            ),
            (&[("HOME", "rel")], None),
            (&[], None),
        ];
        for (vars, want) in cases {
            let got = default_log_path_from(env(vars)).ok();
            assert_eq!(got, want.map(PathBuf::from), "{vars:?}");
        }
    }
}
