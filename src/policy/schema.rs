//! Every policy setting, declared once: its TOML key, type, default, narrowing rule (how a
//! later layer may only narrow it), reload behaviour and doc line, in one table. What is
//! derived from it: the keys each table accepts and their did-you-mean hints (`raw.rs`),
//! the rows of `policy show` and their docs (`show.rs`), the reload diff (every declared
//! setting is compared by its effective value, so none is silently ignored), and the check
//! that docs/policy.md's tables say the same (`tests`).
//!
//! Each row's `kind` says what its value is, so the TOML reader (`raw.rs`) reads every
//! setting by one generic reader (three shapes of their own, `Kind::Own`, by hand), and a
//! plain setting (a scalar kind with a
//! `Ranked`, `Limit` or `Fixed` rule, or a glob list that accumulates or intersects) is
//! layered, stored, turned into its effective value and shown by rules written once per
//! kind (`compile/layering.rs`, `compile/effective.rs`). Its compiled default is its
//! `default` when that is one backticked literal of its kind (`` `3000` ``,
//! `` `"enforce"` ``); any other default text describes a value left unset.
//!
//! A new plain setting is a row here, and a line where its settings struct is built
//! (`compile/build.rs`); the tests fail until docs/policy.md documents it with the type
//! its kind reads and it has a reload example. So is a list a later layer narrows to a
//! subset (`Subset`, of `Schemes`, `Mimes`, `EnvNames` or `PathGlobs`: `compile/subset.rs`
//! checks, narrows and shows it by its kind). A setting with a rule of its own (`Special`,
//! `PartOf`, `Grant`, `Replace`, `Kind::Strings`, `Kind::Own`) also needs its rule in
//! `compile/` and an arm in `compile/effective.rs`; the unit tests fail until it has one,
//! is documented, and has a reload example.

use std::collections::BTreeMap;

use super::Policy;
use super::decision::ArgKind;
use super::settings::{
    Access, CommandRoots, FollowRoots, HardlinkStance, Mode, Ranked, ReadStance, RootsFallback,
    SandboxMode, SymlinkStance, ToolInfer,
};
use crate::audit::syslog::{FACILITIES, MIN_MAX_MESSAGE, MsgFormat};
use crate::audit::{AllowedRecords, OnFailure};

/// What a setting's value is: how `raw.rs` reads it, and how a plain setting's rule is
/// applied to it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// `true` or `false` (for a ranked boolean, `true` is the narrower value).
    Bool,
    /// An integer in this range, inclusive.
    Int(u64, u64),
    /// A positive byte size: an integer, or a string such as `"16 MiB"`.
    Size,
    /// One of these words (in the order hints list them), each with its rank (0 is the
    /// narrowest) or, for a setting that is not ranked, its value.
    Word(&'static dyn Words),
    Str,
    /// A path: `~` and `${HOME}` expanded, then checked absolute and normalized.
    Path,
    /// An array of strings, compiled by the setting's own rule.
    Strings,
    /// An array of path globs (accumulated, or intersected, by the generic rule).
    PathGlobs,
    /// An array of tool name globs (accumulated by the generic rule).
    NameGlobs,
    /// `"allow"` (every scheme), `"deny"` (none) or an array of URI schemes but `file`.
    Schemes,
    /// An array of MIME type patterns (`type/subtype`, `type/*`, `*/*`).
    Mimes,
    /// An array of environment variable names, or prefixes ending in `*`.
    EnvNames,
    /// A shape of its own, read by hand in `raw.rs` (`version`, a word or a list).
    Own,
}

/// The word list of a `Kind::Word` setting.
pub(crate) trait Words: std::fmt::Debug {
    /// Every word with its rank (or value), in the order hints list them.
    fn words(&self) -> Vec<(&'static str, u64)>;
}

/// A ranked type's words (`settings::words!`) carry their rank.
impl<T: Ranked + std::fmt::Debug> Words for &'static [(&'static str, T)] {
    fn words(&self) -> Vec<(&'static str, u64)> {
        self.iter().map(|(w, t)| (*w, t.rank())).collect()
    }
}

/// Words that name a number (syslog facilities), or a ranked list written out.
impl Words for &'static [(&'static str, u8)] {
    fn words(&self) -> Vec<(&'static str, u64)> {
        self.iter().map(|(w, n)| (*w, u64::from(*n))).collect()
    }
}

/// `audit.fsync`, each at its rank (`settings::fsync_rank`; its interval length is a separate
/// key).
pub(crate) const FSYNC_WORDS: &[(&str, u8)] =
    &[("always", 0), ("denials", 1), ("interval", 2), ("never", 3)];

/// `telemetry.protocol`: the only one spoken.
const PROTOCOLS: &[(&str, u8)] = &[("http/protobuf", 0)];

/// How a later layer may change a setting an earlier layer (or the default) set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Narrow {
    /// Must be present in every file.
    Required,
    /// Read in the first file only (what the stack stands on).
    FirstLayer,
    /// Moves only toward the narrow end of its order (`settings::Ranked`).
    Ranked,
    /// A number that may only shrink; unset is unlimited.
    Limit,
    /// Operational, not a permission: the first operator layer that sets it fixes it; a
    /// later layer may only repeat it.
    Fixed,
    /// The entries of every layer accumulate (adding is narrower).
    Accumulate,
    /// Every layer's list must match; a later entry must lie inside an earlier list.
    Intersect,
    /// Entries accumulate; each later one must be covered by an earlier grant or by
    /// `[sandbox.grantable]`.
    Grant,
    /// A later value must be a subset of (or covered by) the earlier one.
    Subset,
    /// A later layer replaces it; the bound lives in other rules (static roots must pass
    /// the root rules).
    Replace,
    /// Judged together with the setting named.
    PartOf(&'static str),
    /// A rule of its own, described.
    Special(&'static str),
}

/// What a policy reload (SIGHUP) does with a changed setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reload {
    /// Decisions from the reload on use it.
    Live,
    /// The running session cannot change it: it takes effect when rootfence next starts.
    NextStart(Deferred),
}

/// Why a change waits for the next start, grouped as the reload report says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Deferred {
    /// Read when the session's roots are first formed.
    Roots,
    /// The log of the session stays as it was opened.
    Audit,
    /// The running server's sandbox cannot change.
    Sandbox,
    /// Telemetry is set up once at start.
    Telemetry,
}

impl Deferred {
    /// The reload report's line for the changed keys of this group.
    fn line(self, keys: &[&str]) -> String {
        let (table, why) = match self {
            Deferred::Roots => {
                let verb = if keys.len() == 1 { "takes" } else { "take" };
                return format!(
                    "{}: {verb} effect when rootfence next starts",
                    keys.join(", ")
                );
            }
            Deferred::Audit => ("audit", "the log of this session stays as it was opened"),
            Deferred::Sandbox => ("sandbox", "the running server's sandbox cannot change"),
            Deferred::Telemetry => ("telemetry", "telemetry is set up once at start"),
        };
        format!("[{table}]: {why}; the new settings take effect when rootfence next starts")
    }
}

/// One setting's declaration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    /// Dotted TOML key (`roots.symlinks`; `tools.paths.tool` for a key of `[[tools.paths]]`).
    pub(crate) key: &'static str,
    /// Its type as docs/policy.md's tables write it, when its kind does not say it
    /// (`Spec::ty`).
    pub(crate) ty: Option<&'static str>,
    /// Its default, as docs/policy.md's tables write it.
    pub(crate) default: &'static str,
    pub(crate) kind: Kind,
    pub(crate) narrow: Narrow,
    pub(crate) reload: Reload,
    /// One line on what it does.
    pub(crate) doc: &'static str,
}

impl Spec {
    /// Its type as docs/policy.md's tables write it: what its kind reads, unless the row
    /// names it (a list of strings or a shape of its own, a string that is a glob or a
    /// URL, words too many to write out).
    pub(crate) fn ty(&self) -> String {
        if let Some(ty) = self.ty {
            return ty.to_owned();
        }
        match self.kind {
            Kind::Bool => "boolean".to_owned(),
            Kind::Size => "size".to_owned(),
            Kind::Int(1, u64::MAX) => "positive integer".to_owned(),
            Kind::Int(min, max) => format!("integer {min}–{max}"),
            Kind::Word(words) => {
                let words: Vec<String> = words
                    .words()
                    .iter()
                    .map(|(w, _)| format!("`\"{w}\"`"))
                    .collect();
                words.join(" \\| ")
            }
            Kind::Str => "string".to_owned(),
            Kind::Path => "path".to_owned(),
            Kind::PathGlobs => "array of path globs".to_owned(),
            Kind::NameGlobs => "array of name globs".to_owned(),
            Kind::Schemes => "`\"allow\"` \\| `\"deny\"` \\| array of schemes".to_owned(),
            Kind::Mimes => "array of MIME patterns".to_owned(),
            Kind::EnvNames => "array of names".to_owned(),
            Kind::Strings | Kind::Own => String::new(),
        }
    }
}

/// Every setting, in the order `policy show` lists them.
#[rustfmt::skip]
pub(crate) const SETTINGS: &[Spec] = &[
    Spec { key: "version", kind: Kind::Own, ty: Some("integer"), default: "(required)", narrow: Narrow::Required, reload: Reload::Live, doc: "schema version" },
    Spec { key: "base", kind: Kind::Str, ty: None, default: "`\"builtin:default\"`", narrow: Narrow::FirstLayer, reload: Reload::Live, doc: "what the stack stands on, read in the **first** file only: `\"builtin:default\"`, `\"builtin:strict\"`, or `\"none\"` (this file replaces the built-in ..." },
    Spec { key: "mode", kind: Kind::Word(&Mode::WORDS), ty: Some("string"), default: "`\"enforce\"`", narrow: Narrow::Ranked, reload: Reload::Live, doc: "`\"enforce\"`: denied messages are blocked. `\"audit\"`: everything is decided and logged, nothing is blocked" },
    Spec { key: "roots.allow", kind: Kind::PathGlobs, ty: None, default: "none (any root)", narrow: Narrow::Intersect, reload: Reload::Live, doc: "a root must match this list" },
    Spec { key: "roots.deny", kind: Kind::PathGlobs, ty: None, default: "`[]`", narrow: Narrow::Accumulate, reload: Reload::Live, doc: "a root matching any entry of any layer is dropped" },
    Spec { key: "roots.other_homes", kind: Kind::PathGlobs, ty: None, default: "`[]` (the built-in default: `[\"/root/**\"]`)", narrow: Narrow::Accumulate, reload: Reload::Live, doc: "other users' homes: a root matching any entry of any layer is dropped **unless it lies inside your own home** (`$HOME`, when it is an absolute ..." },
    Spec { key: "roots.static", kind: Kind::Strings, ty: Some("array of paths"), default: "`[]`", narrow: Narrow::Replace, reload: Reload::NextStart(Deferred::Roots), doc: "roots used when the host declares none" },
    Spec { key: "roots.list_timeout_ms", kind: Kind::Int(1, 600_000), ty: None, default: "`3000`", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Roots), doc: "how long to wait for the host's `roots/list` answer" },
    Spec { key: "roots.launch_wait_ms", kind: Kind::Int(0, 600_000), ty: None, default: "`1000`", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Roots), doc: "how long the server's start waits for the host's answer to rootfence's early roots question" },
    Spec { key: "roots.on_timeout", kind: Kind::Word(&RootsFallback::WORDS), ty: None, default: "`\"static\"`", narrow: Narrow::Ranked, reload: Reload::NextStart(Deferred::Roots), doc: "when the host never answers: use the operator roots (`--root`, `static`" },
    Spec { key: "roots.symlinks", kind: Kind::Word(&SymlinkStance::WORDS), ty: None, default: "`\"follow-within-root\"`", narrow: Narrow::Ranked, reload: Reload::Live, doc: "follow a symlink only when its target stays inside the same root (relative links, and absolute links whose target names a place inside the same ..." },
    Spec { key: "roots.hardlinks", kind: Kind::Word(&HardlinkStance::WORDS), ty: None, default: "`\"allow-preexisting\"`", narrow: Narrow::Ranked, reload: Reload::Live, doc: "how files with more than one hard link are treated (another name of the same file may lie outside the roots): served" },
    Spec { key: "roots.from_command", kind: Kind::Word(&CommandRoots::WORDS), ty: None, default: "`\"directories\"`", narrow: Narrow::Ranked, reload: Reload::NextStart(Deferred::Roots), doc: "when the host declares no roots and there are no operator roots (`--root`, `static`), `rootfence run` takes the existing directories among the ..." },
    Spec { key: "resources.other_schemes", kind: Kind::Schemes, ty: None, default: "`\"allow\"`", narrow: Narrow::Subset, reload: Reload::Live, doc: "which non-`file:` schemes may cross" },
    Spec { key: "resources.allow", kind: Kind::PathGlobs, ty: None, default: "none (any path)", narrow: Narrow::Intersect, reload: Reload::Live, doc: "a `file:` path must match this list, and every layer's list" },
    Spec { key: "resources.deny", kind: Kind::PathGlobs, ty: None, default: "`[]`", narrow: Narrow::Accumulate, reload: Reload::Live, doc: "a `file:` path matching any entry of any layer is denied" },
    Spec { key: "resources.max_bytes", kind: Kind::Size, ty: None, default: "unlimited", narrow: Narrow::Limit, reload: Reload::Live, doc: "largest content item (text, or decoded blob)" },
    Spec { key: "resources.mime", kind: Kind::Mimes, ty: None, default: "any type", narrow: Narrow::Subset, reload: Reload::Live, doc: "allowed MIME types: `type/subtype`, `type/*`, `*/*` (parameters are ignored when matching)" },
    Spec { key: "resources.read", kind: Kind::Word(&ReadStance::WORDS), ty: None, default: "`\"forward\"`", narrow: Narrow::Ranked, reload: Reload::Live, doc: "how `resources/read` of a `file:` URI is answered: forwarded to the server after the URI checks" },
    Spec { key: "tools.deny", kind: Kind::NameGlobs, ty: None, default: "`[]`", narrow: Narrow::Accumulate, reload: Reload::Live, doc: "tools whose name matches are denied (`tools/call` refused)" },
    Spec { key: "tools.writing", kind: Kind::NameGlobs, ty: None, default: "`[]`", narrow: Narrow::Accumulate, reload: Reload::Live, doc: "tools that write" },
    Spec { key: "tools.read_only", kind: Kind::Bool, ty: None, default: "`false`", narrow: Narrow::Ranked, reload: Reload::Live, doc: "deny the tools marked by `writing` (of every layer)" },
    Spec { key: "tools.paths.tool", kind: Kind::Str, ty: Some("name glob"), default: "(required)", narrow: Narrow::Accumulate, reload: Reload::Live, doc: "tools this entry applies to, e.g. `\"read_file\"` or `\"{read_file,write_file}\"`" },
    Spec { key: "tools.paths.pointers", kind: Kind::Strings, ty: Some("array of JSON pointers"), default: "(required, non-empty)", narrow: Narrow::Accumulate, reload: Reload::Live, doc: "RFC 6901 pointers into `params.arguments`, e.g. `\"/path\"`, `\"/options/target\"`" },
    Spec { key: "tools.paths.kind", kind: Kind::Word(&ArgKind::WORDS), ty: None, default: "`\"path\"`", narrow: Narrow::Accumulate, reload: Reload::Live, doc: "whether the argument is a filesystem path or a URI" },
    Spec { key: "tools.paths.server", kind: Kind::Str, ty: Some("name glob"), default: "none (every server)", narrow: Narrow::Accumulate, reload: Reload::Live, doc: "the server the entry describes, matched against the `serverInfo.name` it gives (`initialize`" },
    Spec { key: "tools.infer", kind: Kind::Word(&ToolInfer::WORDS), ty: None, default: "`\"schema\"`", narrow: Narrow::Special("any value while only built-in layers set it; once an operator layer did, only narrower"), reload: Reload::Live, doc: "which other arguments of every server's tools are judged as paths, learned from the tools' own schemas (`tools/list`): see below" },
    Spec { key: "tools.infer_for.tool", kind: Kind::Str, ty: Some("name glob"), default: "(required)", narrow: Narrow::Special("like `tools.infer`: any value while only built-in layers set the stance, then only narrower"), reload: Reload::Live, doc: "the tools this override applies to" },
    Spec { key: "tools.infer_for.infer", kind: Kind::Word(&ToolInfer::WORDS), ty: None, default: "(required)", narrow: Narrow::Special("like `tools.infer`: any value while only built-in layers set the stance, then only narrower"), reload: Reload::Live, doc: "`tools.infer` for the tools the glob matches" },
    Spec { key: "audit.path", kind: Kind::Path, ty: None, default: "the audit module's default location", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Audit), doc: "log file" },
    Spec { key: "audit.fsync", kind: Kind::Word(&FSYNC_WORDS), ty: None, default: "`\"denials\"`", narrow: Narrow::Special("always < denials < interval (shorter first) < never"), reload: Reload::NextStart(Deferred::Audit), doc: "when records are fsynced" },
    Spec { key: "audit.fsync_interval_ms", kind: Kind::Int(1, 3_600_000), ty: None, default: "`1000`", narrow: Narrow::PartOf("audit.fsync"), reload: Reload::NextStart(Deferred::Audit), doc: "the interval for `fsync = \"interval\"` (an error with any other `fsync`)" },
    Spec { key: "audit.rotate_bytes", kind: Kind::Size, ty: None, default: "the audit module's default", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Audit), doc: "rotate the log at this size" },
    Spec { key: "audit.on_failure", kind: Kind::Word(&OnFailure::WORDS), ty: None, default: "`\"stop\"`", narrow: Narrow::Ranked, reload: Reload::NextStart(Deferred::Audit), doc: "when a record cannot be written: stop the session, or report and continue" },
    Spec { key: "audit.log_allowed", kind: Kind::Bool, ty: None, default: "`true`", narrow: Narrow::Ranked, reload: Reload::NextStart(Deferred::Audit), doc: "whether allowed decisions are logged too" },
    Spec { key: "audit.allowed", kind: Kind::Word(&AllowedRecords::WORDS), ty: None, default: "`\"summary\"`", narrow: Narrow::Ranked, reload: Reload::NextStart(Deferred::Audit), doc: "when allowed decisions are logged: the allowed entries of a list page as one `decision` record each, or one `decision_summary` record per page ..." },
    Spec { key: "audit.retain_files", kind: Kind::Int(0, 1_000_000), ty: None, default: "10", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Audit), doc: "rotated log files kept at each rotation" },
    Spec { key: "audit.retain_bytes", kind: Kind::Size, ty: None, default: "none", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Audit), doc: "total size of rotated log files kept at each rotation" },
    Spec { key: "audit.checkpoint_key", kind: Kind::Path, ty: None, default: "none (no checkpoints)", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Audit), doc: "Ed25519 private key (PKCS#8 PEM: `rootfence audit keygen`, or `openssl genpkey -algorithm ed25519`) that signs the chain head into checkpoints ..." },
    Spec { key: "audit.checkpoint_path", kind: Kind::Path, ty: None, default: "beside the log, `<stem>.checkpoints.jsonl`", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Audit), doc: "the checkpoint file (appended, never rotated)" },
    Spec { key: "audit.checkpoint_every_records", kind: Kind::Int(1, 100_000_000), ty: None, default: "1000", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Audit), doc: "checkpoint after this many records written by the session" },
    Spec { key: "audit.checkpoint_every_ms", kind: Kind::Int(100, 86_400_000), ty: None, default: "60000", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Audit), doc: "checkpoint at least this often while records are written (and always at session end)" },
    Spec { key: "audit.syslog.address", kind: Kind::Str, ty: None, default: "(required)", narrow: Narrow::Special("the first layer that configures `[audit.syslog]` fixes it as a whole; a later layer may only repeat it"), reload: Reload::NextStart(Deferred::Audit), doc: "`udp://host:port`, `tcp://host:port` (octet-counted framing) or `unix:///path` (a datagram socket, e.g. `unix:///dev/log`)" },
    Spec { key: "audit.syslog.facility", kind: Kind::Word(&FACILITIES), ty: Some("`\"kern\"` \\| `\"user\"` \\| `\"daemon\"` \\| `\"auth\"` \\| `\"syslog\"` \\| `\"authpriv\"` \\| `\"audit\"` \\| `\"local0\"`…`\"local7\"`"), default: "`\"authpriv\"`", narrow: Narrow::PartOf("audit.syslog.address"), reload: Reload::NextStart(Deferred::Audit), doc: "the syslog facility" },
    Spec { key: "audit.syslog.format", kind: Kind::Word(&MsgFormat::WORDS), ty: None, default: "`\"json\"`", narrow: Narrow::PartOf("audit.syslog.address"), reload: Reload::NextStart(Deferred::Audit), doc: "MSG: the record's JSON line, or its OCSF mapping" },
    Spec { key: "audit.syslog.queue", kind: Kind::Int(16, 10_000_000), ty: None, default: "65536", narrow: Narrow::PartOf("audit.syslog.address"), reload: Reload::NextStart(Deferred::Audit), doc: "messages queued for a slow or absent receiver before new ones are dropped (counted in `sink_dropped` records)" },
    Spec { key: "audit.syslog.sd_id", kind: Kind::Str, ty: None, default: "`\"rootfence@32473\"`", narrow: Narrow::PartOf("audit.syslog.address"), reload: Reload::NextStart(Deferred::Audit), doc: "the structured data element's SD-ID (`name@<private enterprise number>`)" },
    Spec { key: "audit.syslog.max_message", kind: Kind::Int(MIN_MAX_MESSAGE as u64, 64 << 20), ty: None, default: "8000", narrow: Narrow::PartOf("audit.syslog.address"), reload: Reload::NextStart(Deferred::Audit), doc: "the longest message sent, in bytes" },
    Spec { key: "sandbox.mode", kind: Kind::Word(&SandboxMode::WORDS), ty: None, default: "`\"best-effort\"`", narrow: Narrow::Ranked, reload: Reload::NextStart(Deferred::Sandbox), doc: "`strict` refuses to start unless every restriction is fully enforced" },
    Spec { key: "sandbox.read", kind: Kind::Strings, ty: Some("array of paths"), default: "`[]`", narrow: Narrow::Grant, reload: Reload::NextStart(Deferred::Sandbox), doc: "extra paths the server may read (its own state: `~/.gitconfig`)" },
    Spec { key: "sandbox.write", kind: Kind::Strings, ty: Some("array of paths"), default: "`[]`", narrow: Narrow::Grant, reload: Reload::NextStart(Deferred::Sandbox), doc: "extra paths the server may read and write (a tool's own cache: `~/.cache/ms-playwright`)" },
    Spec { key: "sandbox.network", kind: Kind::Own, ty: Some("`\"allow\"` \\| `\"deny\"` \\| array of TCP ports"), default: "`\"allow\"`", narrow: Narrow::Subset, reload: Reload::NextStart(Deferred::Sandbox), doc: "TCP connect and bind" },
    Spec { key: "sandbox.env", kind: Kind::EnvNames, ty: None, default: "`[]`", narrow: Narrow::Grant, reload: Reload::NextStart(Deferred::Sandbox), doc: "environment variables passed to the server besides the sandbox's own baseline: exact names, or a prefix ending in `*` (`\"LC_*\"`)" },
    Spec { key: "sandbox.root_access", kind: Kind::Word(&Access::WORDS), ty: Some("`\"read-write\"` \\| `\"read-only\"`"), default: "`\"read-write\"`", narrow: Narrow::Ranked, reload: Reload::NextStart(Deferred::Sandbox), doc: "access granted to every root" },
    Spec { key: "sandbox.read_only_roots", kind: Kind::PathGlobs, ty: None, default: "`[]`", narrow: Narrow::Accumulate, reload: Reload::NextStart(Deferred::Sandbox), doc: "roots matching any entry of any layer are read-only whatever `root_access` says" },
    Spec { key: "sandbox.follow_roots", kind: Kind::Word(&FollowRoots::WORDS), ty: None, default: "`\"restart\"`", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Sandbox), doc: "when the effective roots change after the server started: start a new server generation under the new grants (`restart`), or keep the launch ..." },
    Spec { key: "sandbox.read_only_paths", kind: Kind::Strings, ty: Some("array of path globs"), default: "the built-in list (git hooks, `.vscode/`, `.mcp.json`, ...)", narrow: Narrow::Accumulate, reload: Reload::NextStart(Deferred::Sandbox), doc: "paths inside writable roots the server may not write (nor a writing tool name)" },
    Spec { key: "sandbox.rlimits.nofile", kind: Kind::Int(1, u64::MAX), ty: None, default: "inherited", narrow: Narrow::Limit, reload: Reload::NextStart(Deferred::Sandbox), doc: "open files" },
    Spec { key: "sandbox.rlimits.address_space", kind: Kind::Size, ty: None, default: "inherited", narrow: Narrow::Limit, reload: Reload::NextStart(Deferred::Sandbox), doc: "address space" },
    Spec { key: "sandbox.rlimits.cpu_seconds", kind: Kind::Int(1, u64::MAX), ty: None, default: "inherited", narrow: Narrow::Limit, reload: Reload::NextStart(Deferred::Sandbox), doc: "CPU seconds" },
    Spec { key: "sandbox.rlimits.processes", kind: Kind::Int(1, u64::MAX), ty: None, default: "inherited", narrow: Narrow::Limit, reload: Reload::NextStart(Deferred::Sandbox), doc: "processes" },
    Spec { key: "sandbox.grantable.env", kind: Kind::EnvNames, ty: None, default: "`[]`", narrow: Narrow::Subset, reload: Reload::NextStart(Deferred::Sandbox), doc: "variable names (or `PREFIX*`) later layers may add to `sandbox.env`" },
    Spec { key: "sandbox.grantable.read", kind: Kind::PathGlobs, ty: None, default: "`[]`", narrow: Narrow::Subset, reload: Reload::NextStart(Deferred::Sandbox), doc: "paths later layers may add to `sandbox.read` (`write` globs count too)" },
    Spec { key: "sandbox.grantable.write", kind: Kind::PathGlobs, ty: None, default: "`[]`", narrow: Narrow::Subset, reload: Reload::NextStart(Deferred::Sandbox), doc: "paths later layers may add to `sandbox.write`" },
    Spec { key: "telemetry.endpoint", kind: Kind::Str, ty: Some("`http://` URL"), default: "`OTEL_EXPORTER_OTLP_ENDPOINT` (or a per-signal `OTEL_EXPORTER_OTLP_{TRACES,METRICS,LOGS}_ENDPOINT`)", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Telemetry), doc: "the collector's OTLP/HTTP base URL, e.g. `\"http://localhost:4318\"`" },
    Spec { key: "telemetry.protocol", kind: Kind::Word(&PROTOCOLS), ty: None, default: "`OTEL_EXPORTER_OTLP_PROTOCOL`, else `http/protobuf`", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Telemetry), doc: "the only protocol rootfence speaks (no gRPC)" },
    Spec { key: "telemetry.service_name", kind: Kind::Str, ty: None, default: "`OTEL_SERVICE_NAME`, else `service.name` in `OTEL_RESOURCE_ATTRIBUTES`, else `\"rootfence\"`", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Telemetry), doc: "the `service.name` resource attribute" },
    Spec { key: "telemetry.resource_attributes", kind: Kind::Str, ty: Some("`\"key=value,key=value\"`"), default: "`OTEL_RESOURCE_ATTRIBUTES`", narrow: Narrow::Fixed, reload: Reload::NextStart(Deferred::Telemetry), doc: "extra resource attributes (values may be percent-encoded), added to the environment's" },
];

/// The position of a declared setting in `SETTINGS`.
///
/// # Panics
///
/// When `key` is not declared: a mistake in the code, which every test that compiles a
/// policy finds (each compile reads every declared key).
pub(crate) fn index(key: &str) -> usize {
    SETTINGS
        .iter()
        .position(|s| s.key == key)
        .unwrap_or_else(|| panic!("`{key}` is not declared in schema::SETTINGS"))
}

/// The keys a table accepts (`""` is the top level): the next segment of every declared key
/// under it, in declaration order, sub-tables included.
pub(crate) fn keys_of(table: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for s in SETTINGS {
        let rest = if table.is_empty() {
            Some(s.key)
        } else {
            s.key.strip_prefix(table).and_then(|r| r.strip_prefix('.'))
        };
        if let Some(name) = rest.map(|r| r.split('.').next().unwrap_or(r))
            && !out.contains(&name)
        {
            out.push(name);
        }
    }
    out
}

/// Every table (`""` the top level) with a key of its own.
pub(crate) fn tables() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = vec![""];
    for s in SETTINGS {
        if let Some((t, _)) = s.key.rsplit_once('.')
            && !out.contains(&t)
        {
            out.push(t);
        }
    }
    out
}

/// An effective value, compared by reload and shown by `policy show`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Bool(bool),
    Int(u64),
    /// A byte size, shown in binary units when it is a whole number of them.
    Size(u64),
    /// A TOML word.
    Word(&'static str),
    Text(String),
    List(Vec<String>),
    /// Written as is (a value with a shape of its own: ports, an fsync interval).
    Raw(String),
    /// Not set: the declaration's default applies.
    Unset,
}

impl Value {
    /// The value as `policy show` writes it; `unset` when not set.
    pub(crate) fn shown(&self, spec: &Spec) -> String {
        match self {
            Value::Bool(b) => b.to_string(),
            Value::Int(n) => n.to_string(),
            Value::Size(n) => fmt_size(*n),
            Value::Word(w) => format!("\"{w}\""),
            Value::Text(t) => format!("{t:?}"),
            Value::List(l) => {
                let items: Vec<String> = l.iter().map(|s| format!("{s:?}")).collect();
                format!("[{}]", items.join(", "))
            }
            Value::Raw(r) => r.clone(),
            Value::Unset => {
                let d = spec.default.replace('`', "");
                if d.starts_with('(') {
                    d
                } else {
                    format!("({d})")
                }
            }
        }
    }
}

/// A size in the largest binary unit that divides it (`"16 MiB"`), else in bytes.
pub(crate) fn fmt_size(n: u64) -> String {
    for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("\"{} {unit}\"", n >> shift);
        }
    }
    n.to_string()
}

/// Whether `policy show` lists the setting as a `key = value` row: lists of rules have
/// sections of their own (each entry with its origin), and a part of another setting is
/// listed only when set.
pub(crate) fn is_row(spec: &Spec, value: &Value) -> bool {
    let sectioned = matches!(
        spec.narrow,
        Narrow::Required | Narrow::FirstLayer | Narrow::Accumulate | Narrow::Intersect
    ) || spec.key.starts_with("tools.infer_for.");
    let unset_part = matches!(spec.narrow, Narrow::PartOf(_)) && *value == Value::Unset;
    !(sectioned || unset_part)
}

/// The declared settings whose effective value differs between two policies.
pub(crate) fn changed(old: &Policy, new: &Policy) -> Vec<&'static Spec> {
    SETTINGS
        .iter()
        .zip(old.effective.iter().zip(&new.effective))
        .filter(|(_, ((a, _), (b, _)))| a != b)
        .map(|(s, _)| s)
        .collect()
}

/// What a reload from `old` to `new` cannot apply to the running session, one line per
/// group of changed settings (derived from each setting's declared reload behaviour).
pub fn reload_deferred(old: &Policy, new: &Policy) -> Vec<String> {
    let mut groups: BTreeMap<Deferred, Vec<&str>> = BTreeMap::new();
    for s in changed(old, new) {
        if let Reload::NextStart(d) = s.reload {
            groups.entry(d).or_default().push(s.key);
        }
    }
    groups.iter().map(|(d, keys)| d.line(keys)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(text: &str) -> Policy {
        let layer = ("t.toml".to_owned(), format!("version = 1\n{text}"));
        Policy::from_sources_with_home(&[layer], Some("/home/u"))
            .unwrap_or_else(|e| panic!("{text}\n{e}"))
    }

    /// For each setting: two policies that differ in it alone. A new setting without an
    /// example here fails `a_change_to_any_setting_is_seen_by_reload`.
    fn example(key: &str) -> (&'static str, &'static str) {
        const PATHS: &str = "[[tools.paths]]\ntool = \"a\"\npointers = [\"/p\"]";
        const INFER: &str = "[[tools.infer_for]]\ntool = \"a\"\ninfer = \"off\"";
        const SYSLOG: &str = "[audit.syslog]\naddress = \"udp://127.0.0.1:514\"";
        match key {
            "base" => ("", "base = \"none\""),
            "mode" => ("", "mode = \"audit\""),
            "roots.allow" => ("", "[roots]\nallow = [\"/srv/**\"]"),
            "roots.deny" => ("", "[roots]\ndeny = [\"/srv/**\"]"),
            "roots.other_homes" => ("", "[roots]\nother_homes = [\"/home/*/**\"]"),
            "roots.from_command" => ("", "[roots]\nfrom_command = \"off\""),
            "roots.static" => ("", "[roots]\nstatic = [\"/srv\"]"),
            "roots.list_timeout_ms" => ("", "[roots]\nlist_timeout_ms = 10"),
            "roots.launch_wait_ms" => ("", "[roots]\nlaunch_wait_ms = 10"),
            "roots.on_timeout" => ("", "[roots]\non_timeout = \"deny\""),
            "roots.symlinks" => ("", "[roots]\nsymlinks = \"never\""),
            "roots.hardlinks" => ("", "[roots]\nhardlinks = \"deny\""),
            "resources.other_schemes" => ("", "[resources]\nother_schemes = \"deny\""),
            "resources.allow" => ("", "[resources]\nallow = [\"/srv/**\"]"),
            "resources.deny" => ("", "[resources]\ndeny = [\"**/.env\"]"),
            "resources.max_bytes" => ("", "[resources]\nmax_bytes = 1024"),
            "resources.mime" => ("", "[resources]\nmime = [\"text/*\"]"),
            "resources.read" => ("", "[resources]\nread = \"serve\""),
            "tools.deny" => ("", "[tools]\ndeny = [\"x\"]"),
            "tools.writing" => ("", "[tools]\nwriting = [\"x\"]"),
            "tools.read_only" => ("", "[tools]\nread_only = true"),
            "tools.infer" => ("", "[tools]\ninfer = \"off\""),
            "tools.paths.tool" => (PATHS, "[[tools.paths]]\ntool = \"b\"\npointers = [\"/p\"]"),
            "tools.paths.pointers" => (PATHS, "[[tools.paths]]\ntool = \"a\"\npointers = [\"/q\"]"),
            "tools.paths.kind" => (
                PATHS,
                concat!(
                    "[[tools.paths]]\ntool = \"a\"\npointers = [\"/p\"]",
                    "\nkind = \"uri\""
                ),
            ),
            "tools.paths.server" => (
                PATHS,
                concat!(
                    "[[tools.paths]]\ntool = \"a\"\npointers = [\"/p\"]",
                    "\nserver = \"s\""
                ),
            ),
            "tools.infer_for.tool" => (INFER, "[[tools.infer_for]]\ntool = \"b\"\ninfer = \"off\""),
            "tools.infer_for.infer" => (
                INFER,
                "[[tools.infer_for]]\ntool = \"a\"\ninfer = \"strict\"",
            ),
            "audit.path" => ("", "[audit]\npath = \"/var/log/r.jsonl\""),
            "audit.fsync" => ("", "[audit]\nfsync = \"always\""),
            "audit.fsync_interval_ms" => (
                "[audit]\nfsync = \"interval\"",
                "[audit]\nfsync = \"interval\"\nfsync_interval_ms = 50",
            ),
            "audit.rotate_bytes" => ("", "[audit]\nrotate_bytes = 1048576"),
            "audit.on_failure" => ("", "[audit]\non_failure = \"continue\""),
            "audit.log_allowed" => ("", "[audit]\nlog_allowed = false"),
            "audit.allowed" => ("", "[audit]\nallowed = \"each\""),
            "audit.retain_files" => ("", "[audit]\nretain_files = 3"),
            "audit.retain_bytes" => ("", "[audit]\nretain_bytes = 1048576"),
            "audit.checkpoint_key" => ("", "[audit]\ncheckpoint_key = \"/k.pem\""),
            "audit.checkpoint_path" => ("", "[audit]\ncheckpoint_path = \"/c.jsonl\""),
            "audit.checkpoint_every_records" => ("", "[audit]\ncheckpoint_every_records = 5"),
            "audit.checkpoint_every_ms" => ("", "[audit]\ncheckpoint_every_ms = 1000"),
            "audit.syslog.address" => ("", SYSLOG),
            "audit.syslog.facility" => (
                SYSLOG,
                concat!(
                    "[audit.syslog]\naddress = \"udp://127.0.0.1:514\"",
                    "\nfacility = \"local0\""
                ),
            ),
            "audit.syslog.format" => (
                SYSLOG,
                concat!(
                    "[audit.syslog]\naddress = \"udp://127.0.0.1:514\"",
                    "\nformat = \"ocsf\""
                ),
            ),
            "audit.syslog.queue" => (
                SYSLOG,
                concat!(
                    "[audit.syslog]\naddress = \"udp://127.0.0.1:514\"",
                    "\nqueue = 100"
                ),
            ),
            "audit.syslog.sd_id" => (
                SYSLOG,
                concat!(
                    "[audit.syslog]\naddress = \"udp://127.0.0.1:514\"",
                    "\nsd_id = \"x@1\""
                ),
            ),
            "audit.syslog.max_message" => (
                SYSLOG,
                concat!(
                    "[audit.syslog]\naddress = \"udp://127.0.0.1:514\"",
                    "\nmax_message = 4096"
                ),
            ),
            "telemetry.endpoint" => ("", "[telemetry]\nendpoint = \"http://localhost:4318\""),
            "telemetry.protocol" => ("", "[telemetry]\nprotocol = \"http/protobuf\""),
            "telemetry.service_name" => ("", "[telemetry]\nservice_name = \"svc\""),
            "telemetry.resource_attributes" => ("", "[telemetry]\nresource_attributes = \"a=b\""),
            "sandbox.mode" => ("", "[sandbox]\nmode = \"strict\""),
            "sandbox.read" => ("", "[sandbox]\nread = [\"/srv/x\"]"),
            "sandbox.write" => ("", "[sandbox]\nwrite = [\"/srv/x\"]"),
            "sandbox.network" => ("", "[sandbox]\nnetwork = \"deny\""),
            "sandbox.env" => ("", "[sandbox]\nenv = [\"FOO\"]"),
            "sandbox.root_access" => ("", "[sandbox]\nroot_access = \"read-only\""),
            "sandbox.read_only_roots" => ("", "[sandbox]\nread_only_roots = [\"/srv/**\"]"),
            "sandbox.follow_roots" => ("", "[sandbox]\nfollow_roots = \"launch\""),
            "sandbox.read_only_paths" => ("", "[sandbox]\nread_only_paths = [\"**/Makefile\"]"),
            "sandbox.rlimits.nofile" => ("", "[sandbox.rlimits]\nnofile = 64"),
            "sandbox.rlimits.address_space" => {
                ("", "[sandbox.rlimits]\naddress_space = 1073741824")
            }
            "sandbox.rlimits.cpu_seconds" => ("", "[sandbox.rlimits]\ncpu_seconds = 10"),
            "sandbox.rlimits.processes" => ("", "[sandbox.rlimits]\nprocesses = 10"),
            "sandbox.grantable.env" => ("", "[sandbox.grantable]\nenv = [\"FOO\"]"),
            "sandbox.grantable.read" => ("", "[sandbox.grantable]\nread = [\"/srv/**\"]"),
            "sandbox.grantable.write" => ("", "[sandbox.grantable]\nwrite = [\"/srv/**\"]"),
            other => panic!("`{other}` has no reload example: add one here"),
        }
    }

    /// Issue 25's regression: reload compared `[audit]` by its `Debug` string and
    /// `[sandbox]` by a hand-written list of ten fields, so a new setting was silently
    /// ignored. Now every declared setting has a reload behaviour and its change is seen;
    /// one that must wait for the next start is reported.
    #[test]
    fn a_change_to_any_setting_is_seen_by_reload() {
        for spec in SETTINGS.iter().filter(|s| s.narrow != Narrow::Required) {
            let (a, b) = example(spec.key);
            let (old, new) = (policy(a), policy(b));
            let keys: Vec<&str> = changed(&old, &new).iter().map(|s| s.key).collect();
            assert!(keys.contains(&spec.key), "{}: changed {keys:?}", spec.key);
            let deferred = reload_deferred(&old, &new);
            match spec.reload {
                Reload::Live => assert!(deferred.is_empty(), "{}: {deferred:?}", spec.key),
                Reload::NextStart(_) => assert!(!deferred.is_empty(), "{}", spec.key),
            }
            assert!(changed(&new, &new).is_empty(), "{}", spec.key);
        }
    }

    #[test]
    fn every_setting_has_an_effective_value_and_a_doc_line() {
        let p = Policy::builtin_default();
        assert_eq!(p.effective.len(), SETTINGS.len());
        for (spec, (_, prov)) in SETTINGS.iter().zip(&p.effective) {
            assert!(
                !prov.rule.ends_with("not compiled"),
                "{}: no arm in compile/effective.rs",
                spec.key
            );
            assert!(
                !spec.doc.is_empty() && !spec.ty().is_empty(),
                "{}",
                spec.key
            );
            let twice = SETTINGS.iter().filter(|s| s.key == spec.key).count();
            assert_eq!(twice, 1, "{} is declared more than once", spec.key);
        }
    }

    /// A row names its type only where its kind cannot say it (a list of strings, a shape
    /// of its own) or docs/policy.md says it otherwise (a glob, a URL, words too many to
    /// write out); the words such a row quotes are words the reader accepts.
    #[test]
    fn a_named_type_is_one_its_kind_does_not_say() {
        for spec in SETTINGS {
            let key = spec.key;
            let derived = Spec { ty: None, ..*spec }.ty();
            match (spec.ty, spec.kind) {
                (None, Kind::Strings | Kind::Own) => panic!("{key}: name its type in its row"),
                (Some(ty), _) => assert_ne!(ty, derived, "{key}: its kind says its type"),
                (None, _) => {}
            }
            if let (Some(ty), Kind::Word(words)) = (spec.ty, spec.kind) {
                let words: Vec<&str> = words.words().iter().map(|(w, _)| *w).collect();
                for q in ty.split("`\"").skip(1) {
                    let w = q.split('"').next().unwrap_or_default();
                    assert!(words.contains(&w), "{key}: `{w}` is not a word it accepts");
                }
            }
        }
    }

    #[test]
    fn reload_reports_group_the_changed_keys() {
        let old = policy("");
        let new = policy(
            "[roots]\non_timeout = \"deny\"\n[sandbox]\nmode = \"strict\"\nnetwork = \"deny\"",
        );
        assert_eq!(
            reload_deferred(&old, &new),
            vec![
                "roots.on_timeout: takes effect when rootfence next starts".to_owned(),
                Deferred::Sandbox.line(&[]),
            ]
        );
    }

    #[test]
    fn table_keys_are_derived_from_the_declarations() {
        assert_eq!(
            keys_of("audit.syslog"),
            [
                "address",
                "facility",
                "format",
                "queue",
                "sd_id",
                "max_message"
            ]
        );
        assert!(keys_of("").contains(&"telemetry") && keys_of("").contains(&"version"));
        assert!(keys_of("tools").contains(&"infer_for") && keys_of("sandbox").contains(&"rlimits"));
        assert!(tables().contains(&"sandbox.grantable"));
    }

    /// docs/policy.md's tables say what the declarations say: each row's type and default,
    /// and every declared key is documented.
    #[test]
    fn docs_policy_md_agrees_with_the_declarations() {
        let docs = include_str!("../../docs/policy.md");
        let mut section: Option<String> = None;
        let mut rows = Vec::new();
        for line in docs.lines() {
            if let Some(h) = line.strip_prefix("### ") {
                section = match h {
                    "Top level" => Some(String::new()),
                    _ => h
                        .strip_prefix("`[")
                        .and_then(|t| t.strip_suffix("]`"))
                        .map(str::to_owned),
                };
                continue;
            }
            if line.starts_with("## ") {
                section = None;
                continue;
            }
            let Some(sec) = &section else { continue };
            if let Some(t) = line.strip_prefix('`').and_then(|l| l.split('`').next())
                && let Some(t) = t.trim_start_matches('[').strip_suffix(']')
            {
                section = Some(t.trim_end_matches(']').to_owned());
                continue;
            }
            if line.starts_with("| `") {
                let cells: Vec<&str> = line.split(" | ").map(str::trim).collect();
                let key = cells[0].trim_start_matches("| ").trim_matches('`');
                let key = if sec.is_empty() {
                    key.to_owned()
                } else {
                    format!("{sec}.{key}")
                };
                rows.push((key, cells[1].to_owned(), cells[2].to_owned()));
            }
        }
        assert!(rows.len() > 50, "{rows:?}");
        for (key, ty, default) in &rows {
            let spec = SETTINGS.iter().find(|s| s.key == key).unwrap_or_else(|| {
                panic!("docs/policy.md documents `{key}`, which is not declared")
            });
            assert_eq!(
                (spec.ty(), spec.default),
                (ty.clone(), default.as_str()),
                "{key}"
            );
        }
        for spec in SETTINGS {
            let name = spec.key.rsplit('.').next().unwrap_or(spec.key);
            assert!(
                rows.iter().any(|(k, _, _)| k == spec.key) || docs.contains(&format!("`{name}`")),
                "`{}` is declared but not in docs/policy.md",
                spec.key
            );
        }
    }
}
