//! The compiled, effective settings of a policy (what the other modules read), and the
//! narrowing order of every ordered setting: the order in which a later layer may move a
//! setting ("narrower" means it permits less or audits more).
//!
//! The tables here are plain data. Matching (globs) lives in `compile.rs` / `decision.rs`.

use std::path::PathBuf;
use std::time::Duration;

use super::decision::{ArgKind, Provenance};
use super::grant::{Grantable, Grants};
// The audit log's own types: the policy only chooses among them.
use crate::audit::syslog::MsgFormat;
use crate::audit::{AllowedRecords, FsyncPolicy, OnFailure};

/// Whether decisions block (enforce) or are only recorded (audit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Denied messages are blocked.
    Enforce,
    /// Everything is decided and logged; nothing is blocked.
    Audit,
}

/// What happens when the host never answers `roots/list` within the timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RootsFallback {
    /// Use the operator roots (`--root` and `roots.static`); with none, `file:` stays denied.
    Static,
    /// Deny every `file:` URI until the host answers.
    Deny,
}

/// How symbolic links met while resolving a path are treated: the resolver's own type, so
/// the stance a policy states is exactly the one the checks apply.
pub use crate::fsaccess::SymlinkStance;

/// The sandbox's own types, so what a policy states is exactly what the sandbox applies.
pub use crate::sandbox::{Access, Network, Rlimits, SandboxMode};

/// `tools.infer`: which tool arguments are judged beyond those the policy names (the
/// inference's own type, so the stance a policy states is exactly the one applied).
pub use crate::toolargs::Infer as ToolInfer;

/// How files with more than one hard link are treated: the resolver's own type, so the
/// stance a policy states is exactly the one the checks apply.
pub use crate::fsaccess::HardlinkStance;

/// Which non-`file:` URI schemes are allowed. `file:` is always checked against the roots
/// and the path rules, whatever this says.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SchemeStance {
    /// Every other scheme is allowed.
    AllowAll,
    /// Only these schemes (lowercase) are allowed; an empty list denies every other scheme.
    Only(Vec<String>),
}

/// How `resources/read` of a `file:` URI is answered (issue 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadStance {
    /// Forward the read to the server after the URI checks; trust its bytes.
    Forward,
    /// Forward, then compare the server's bytes with rootfence's own capability-safe read.
    Verify,
    /// Answer from rootfence's own capability-safe read; the server never sees the read.
    Serve,
}

/// A root that rootfence uses when the host declares none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticRoot {
    /// Absolute, normalized path (`~` and `${HOME}` expanded). Not yet resolved on disk:
    /// the roots module canonicalizes and opens it.
    pub path: String,
    /// Where it was declared.
    pub provenance: Provenance,
}

/// Whether `rootfence run` takes roots from the server's command line when nothing else
/// gives the session any (issue 27): the host declares no roots, and there is no `--root`
/// and no `roots.static`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandRoots {
    /// The existing directories among the server's arguments, derived as `rootfence wrap`
    /// derives them (never `/` or the whole home; each still passes the root rules).
    Directories,
    /// None: without host roots or `--root`, `file:` stays denied.
    Off,
}

/// `[roots]`: how the effective roots are formed (issue 6).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RootsSettings {
    /// Roots used when the host declares none (already inside every `roots.allow`).
    pub static_roots: Vec<StaticRoot>,
    /// How long to wait for the host's `roots/list` answer.
    pub list_timeout: Duration,
    /// How long the server's start waits for the host's answer to rootfence's early roots
    /// question; past it, the server starts under the operator roots and a new generation
    /// follows when the answer comes.
    pub launch_wait: Duration,
    /// What to do when that wait times out.
    pub on_timeout: RootsFallback,
    /// Symbolic link stance.
    pub symlinks: SymlinkStance,
    /// Hard link stance.
    pub hardlinks: HardlinkStance,
    /// Roots from the server's command line when nothing else gives any.
    pub from_command: CommandRoots,
}

/// `[resources]`: schemes, limits and the read stance (issue 6). Path rules are applied
/// by [`Policy::decide_resource`](super::Policy::decide_resource).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResourceSettings {
    /// Which non-`file:` schemes are allowed.
    pub other_schemes: SchemeStance,
    /// Largest content item (text or decoded blob) in bytes; `None` is unlimited.
    pub max_bytes: Option<u64>,
    /// MIME allow-list (`type/subtype`, `type/*`, `*/*`), lowercase; `None` is any type.
    pub mime: Option<Vec<String>>,
    /// How `file:` reads are answered.
    pub read: ReadStance,
    /// Every `resources.deny` glob of every layer, expanded, for consumers that must
    /// express the denials elsewhere (the sandbox).
    pub deny_globs: Vec<String>,
}

/// `[audit]`: reserved for the audit log (issue 5).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuditSettings {
    /// Log file; `None` means the audit module's default location.
    pub path: Option<PathBuf>,
    /// fsync stance.
    pub fsync: FsyncPolicy,
    /// Rotate when the file reaches this size; `None` means the audit module's default.
    pub rotate_bytes: Option<u64>,
    /// Stance on write failure.
    pub on_failure: OnFailure,
    /// Whether allowed decisions are logged too.
    pub log_allowed: bool,
    /// How the allowed entries of a list page are logged (when allowed decisions are).
    pub allowed: AllowedRecords,
    /// Rotated files kept; `None` means the audit module's default.
    pub retain_files: Option<u64>,
    /// Bytes of rotated files kept; `None` means no limit by size.
    pub retain_bytes: Option<u64>,
    /// The Ed25519 private key that signs checkpoints; `None`: no checkpoints.
    pub checkpoint_key: Option<PathBuf>,
    /// The checkpoint file; `None` means beside the log (`<stem>.checkpoints.jsonl`).
    pub checkpoint_path: Option<PathBuf>,
    /// Checkpoint after this many records; `None` means the audit module's default.
    pub checkpoint_every_records: Option<u64>,
    /// Checkpoint at least this often (ms) while records are written; `None`: default.
    pub checkpoint_every_ms: Option<u64>,
    /// `[audit.syslog]`: a copy of every record to syslog; `None`: none.
    pub syslog: Option<crate::audit::syslog::SyslogConfig>,
}

/// `sandbox.follow_roots`: what happens when the effective roots change after the server
/// started, since the OS sandbox of a running process can neither widen nor be narrowed from
/// outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FollowRoots {
    /// Start a new server generation under the new grants and move the session to it: the
    /// kernel's boundary stays the protocol's.
    Restart,
    /// Keep the grants of the launch (for servers that cannot be restarted): roots beyond
    /// them are unreachable to the server, roots given up stay reachable to it; both are
    /// reported (`roots_update.outside_sandbox`).
    Launch,
}

/// `[sandbox]`: reserved for the OS sandbox (issue 7).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SandboxSettings {
    /// How hard the sandbox is applied.
    pub mode: SandboxMode,
    /// Extra paths the server may read (absolute, normalized, expanded).
    pub read: Vec<PathBuf>,
    /// Extra paths the server may read and write.
    pub write: Vec<PathBuf>,
    /// Network stance.
    pub network: Network,
    /// Resource limits.
    pub rlimits: Rlimits,
    /// Environment variables passed to the server besides the sandbox's own baseline:
    /// exact names, or a prefix ending in `*` (e.g. `LC_*`). Every layer's entries.
    pub env: Vec<String>,
    /// `env`, `read` and `write` with the rule that granted each (for messages).
    pub grants: Grants,
    /// What a grant made after the policy (`run --env`) may add: see
    /// [`Policy::check_grant`](super::Policy::check_grant).
    pub(crate) grantable: Grantable,
    /// Access granted to every root, unless it matches `read_only_roots`.
    pub root_access: Access,
    /// What happens when the roots change after launch.
    pub follow_roots: FollowRoots,
    /// Root globs (expanded) that are read-only whatever `root_access` says.
    pub read_only_roots: Vec<String>,
    pub(crate) read_only_roots_set: globset::GlobSet,
    /// Path globs (expanded) whose matches inside writable roots are read-only to the
    /// server: the sandbox makes them so at launch, and writing tools may not name them.
    pub read_only_paths: Vec<String>,
    pub(crate) read_only_paths_set: globset::GlobSet,
}

impl SandboxSettings {
    /// The access the sandbox grants to a root with this canonical path.
    pub fn access_for_root(&self, canonical_path: &str) -> Access {
        if self.root_access == Access::ReadOnly || self.read_only_roots_set.is_match(canonical_path)
        {
            Access::ReadOnly
        } else {
            Access::ReadWrite
        }
    }

    /// Whether a canonical path matches `read_only_paths` (a place where a file written now
    /// runs code outside the sandbox later).
    pub fn is_read_only_path(&self, canonical_path: &str) -> bool {
        self.read_only_paths_set.is_match(canonical_path)
    }
}

/// Whether an `env` entry (exact name or `PREFIX*`) covers a name or a narrower entry.
pub(crate) fn env_pattern_covers(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// The narrowing order of ordered settings: `rank` grows as the setting permits more (or
/// audits less). A later layer may set a value whose rank is at most the earlier rank.
pub(crate) trait Ranked {
    fn rank(&self) -> u64;
}

impl Ranked for bool {
    /// For booleans whose `true` is the narrower value (`read_only`, `log_allowed`).
    fn rank(&self) -> u64 {
        u64::from(!*self)
    }
}

/// Syslog formats (the audit module's words) are not ranked: `[audit.syslog]` is fixed
/// as a whole.
impl Ranked for MsgFormat {
    fn rank(&self) -> u64 {
        0
    }
}

impl Word for MsgFormat {
    const ALL: &'static [(&'static str, Self)] = MsgFormat::WORDS;
}

/// fsync kinds are ranked always < denials < interval < never; two intervals compare by
/// length (a shorter interval is narrower).
pub(crate) fn fsync_rank(f: &FsyncPolicy) -> (u8, u128) {
    match f {
        FsyncPolicy::Always => (0, 0),
        FsyncPolicy::Denials => (1, 0),
        FsyncPolicy::Interval(d) => (2, d.as_millis()),
        FsyncPolicy::Never => (3, 0),
    }
}

/// The word each enum value is written as in TOML, for messages and `policy show`. Each
/// type's words and narrowing ranks are declared together by `words!` (rank 0 is the
/// narrowest).
pub(crate) trait Word: Sized + PartialEq + 'static {
    /// Every word with its value, in the order hints list them.
    const ALL: &'static [(&'static str, Self)];

    fn word(&self) -> &'static str {
        let found = Self::ALL.iter().find(|(_, v)| v == self);
        found.map_or("?", |(w, _)| w)
    }
}

macro_rules! words {
    ($ty:ty { $($variant:path => $word:literal @ $rank:literal),+ $(,)? }) => {
        impl Word for $ty {
            const ALL: &'static [(&'static str, $ty)] = <$ty>::WORDS;
        }
        impl Ranked for $ty {
            fn rank(&self) -> u64 {
                match self { $($variant => $rank),+ }
            }
        }
        impl $ty {
            /// Every accepted TOML word with its value.
            pub(crate) const WORDS: &'static [(&'static str, $ty)] = &[$(($word, $variant)),+];
        }
    };
}

words!(Mode { Mode::Enforce => "enforce" @ 0, Mode::Audit => "audit" @ 1 });
words!(RootsFallback { RootsFallback::Static => "static" @ 1, RootsFallback::Deny => "deny" @ 0 });
words!(CommandRoots { CommandRoots::Directories => "directories" @ 1, CommandRoots::Off => "off" @ 0 });
words!(SymlinkStance {
    SymlinkStance::FollowWithinRoot => "follow-within-root" @ 1,
    SymlinkStance::Never => "never" @ 0,
});
words!(HardlinkStance {
    HardlinkStance::Allow => "allow" @ 2,
    HardlinkStance::AllowPreexisting => "allow-preexisting" @ 1,
    HardlinkStance::Deny => "deny" @ 0,
});
words!(ReadStance {
    ReadStance::Forward => "forward" @ 2,
    ReadStance::Verify => "verify" @ 1,
    ReadStance::Serve => "serve" @ 0,
});
words!(ToolInfer {
    ToolInfer::Strict => "strict" @ 0,
    ToolInfer::Schema => "schema" @ 1,
    ToolInfer::Off => "off" @ 2,
});
words!(OnFailure { OnFailure::Stop => "stop" @ 0, OnFailure::Continue => "continue" @ 1 });
words!(AllowedRecords { AllowedRecords::Each => "each" @ 0, AllowedRecords::Summary => "summary" @ 1 });
words!(SandboxMode {
    SandboxMode::Off => "off" @ 2,
    SandboxMode::BestEffort => "best-effort" @ 1,
    SandboxMode::Strict => "strict" @ 0,
});
words!(Access { Access::ReadOnly => "read-only" @ 0, Access::ReadWrite => "read-write" @ 1 });
words!(ArgKind { ArgKind::Path => "path" @ 0, ArgKind::Uri => "uri" @ 1 });
words!(FollowRoots { FollowRoots::Restart => "restart" @ 0, FollowRoots::Launch => "launch" @ 1 });

impl Mode {
    /// The TOML word (`enforce`, `audit`).
    pub fn as_str(self) -> &'static str {
        self.word()
    }
}
