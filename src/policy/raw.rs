//! The raw policy layer: the TOML document of one file, checked for shape only (known keys,
//! value types, enum words, number ranges), every value kept with its byte span. Nothing
//! here expands, compiles or compares layers; `compile.rs` does that.
//!
//! Why not `#[derive(Deserialize)]` with `deny_unknown_fields`: serde stops at the first
//! problem, and the issue asks for every error at once. So the document is parsed into
//! toml's spanned tree (`toml::de::DeTable`) and walked by hand. Every table still rejects
//! unknown keys (the `deny_unknown_fields` contract), with a did-you-mean hint. The schema
//! stays flat (one level of tables, one array of tables) so every value has a span.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::decision::ArgKind;
use super::error::{ErrorKind, PolicyError, Source};
use super::schema::{self, SETTINGS};
use super::settings::{
    Access, CommandRoots, FollowRoots, HardlinkStance, Mode, ReadStance, RootsFallback,
    SandboxMode, SymlinkStance, ToolInfer,
};
use crate::audit::syslog::{FACILITIES, MsgFormat};
use crate::audit::{AllowedRecords, OnFailure};

/// The only schema version this build understands.
pub(crate) const SCHEMA_VERSION: i64 = 1;

/// A value with the span of its text in the source.
#[derive(Debug, Clone)]
pub(crate) struct Sp<T> {
    pub(crate) v: T,
    pub(crate) span: Range<usize>,
}

/// A key's value, with the dotted key name and both spans.
#[derive(Debug, Clone)]
pub(crate) struct Entry<T> {
    /// Dotted name, e.g. `resources.deny`.
    pub(crate) key: &'static str,
    pub(crate) key_span: Range<usize>,
    pub(crate) v: T,
    pub(crate) span: Range<usize>,
}

impl<T> Entry<T> {
    /// The same key and spans, holding `f` of the value.
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Entry<U> {
        let v = f(self.v);
        Entry {
            key: self.key,
            key_span: self.key_span,
            v,
            span: self.span,
        }
    }

    /// The same key and spans, holding `v`.
    fn with<U>(self, v: U) -> Entry<U> {
        self.map(|_| v)
    }
}

/// `resources.other_schemes`: a word or a list.
#[derive(Debug, Clone)]
pub(crate) enum RawSchemes {
    Allow,
    Deny,
    List(Vec<Sp<String>>),
}

/// `sandbox.network`: a word or a list of ports.
#[derive(Debug, Clone)]
pub(crate) enum RawNetwork {
    Allow,
    Deny,
    Ports(Vec<Sp<u16>>),
}

/// `audit.fsync` word (the interval length is a separate key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FsyncWord {
    Always,
    Denials,
    Interval,
    Never,
}

pub(crate) const FSYNC_WORDS: &[(&str, FsyncWord)] = &[
    ("always", FsyncWord::Always),
    ("denials", FsyncWord::Denials),
    ("interval", FsyncWord::Interval),
    ("never", FsyncWord::Never),
];

/// `other_schemes` and `network` as a word.
const ALLOW_DENY: &[(&str, bool)] = &[("allow", true), ("deny", false)];

const ARG_KIND_WORDS: &[(&str, ArgKind)] = &[("path", ArgKind::Path), ("uri", ArgKind::Uri)];

/// One `[[tools.paths]]` entry.
#[derive(Debug, Clone)]
pub(crate) struct RawToolPath {
    pub(crate) tool: Option<Entry<String>>,
    pub(crate) pointers: Option<Entry<Vec<Sp<String>>>>,
    pub(crate) kind: Option<Entry<ArgKind>>,
    /// The server this entry describes (a name glob over its `serverInfo.name`).
    pub(crate) server: Option<Entry<String>>,
}

/// One `[[tools.infer_for]]` entry: `tools.infer` for the tools a glob names.
#[derive(Debug, Clone)]
pub(crate) struct RawInferFor {
    pub(crate) tool: Option<Entry<String>>,
    pub(crate) infer: Option<Entry<ToolInfer>>,
}

type Strings = Option<Entry<Vec<Sp<String>>>>;

/// One layer's document, shape-checked.
#[derive(Debug, Clone, Default)]
pub(crate) struct RawLayer {
    pub(crate) version: Option<Entry<i64>>,
    /// What the layer stacks on (`builtin:<name>` or `none`); read in the first layer.
    pub(crate) base: Option<Entry<String>>,
    pub(crate) mode: Option<Entry<Mode>>,

    pub(crate) roots_allow: Strings,
    pub(crate) roots_deny: Strings,
    pub(crate) roots_other_homes: Strings,
    pub(crate) roots_static: Strings,
    pub(crate) roots_list_timeout_ms: Option<Entry<u64>>,
    pub(crate) roots_launch_wait_ms: Option<Entry<u64>>,
    pub(crate) roots_on_timeout: Option<Entry<RootsFallback>>,
    pub(crate) roots_symlinks: Option<Entry<SymlinkStance>>,
    pub(crate) roots_hardlinks: Option<Entry<HardlinkStance>>,
    pub(crate) roots_from_command: Option<Entry<CommandRoots>>,

    pub(crate) res_other_schemes: Option<Entry<RawSchemes>>,
    pub(crate) res_allow: Strings,
    pub(crate) res_deny: Strings,
    pub(crate) res_max_bytes: Option<Entry<u64>>,
    pub(crate) res_mime: Strings,
    pub(crate) res_read: Option<Entry<ReadStance>>,

    pub(crate) tools_deny: Strings,
    pub(crate) tools_writing: Strings,
    pub(crate) tools_read_only: Option<Entry<bool>>,
    pub(crate) tools_paths: Vec<RawToolPath>,
    pub(crate) tools_infer: Option<Entry<ToolInfer>>,
    pub(crate) tools_infer_for: Vec<RawInferFor>,

    pub(crate) audit_path: Option<Entry<String>>,
    pub(crate) audit_fsync: Option<Entry<FsyncWord>>,
    pub(crate) audit_fsync_interval_ms: Option<Entry<u64>>,
    pub(crate) audit_rotate_bytes: Option<Entry<u64>>,
    pub(crate) audit_on_failure: Option<Entry<OnFailure>>,
    pub(crate) audit_log_allowed: Option<Entry<bool>>,
    pub(crate) audit_allowed: Option<Entry<AllowedRecords>>,
    pub(crate) audit_retain_files: Option<Entry<u64>>,
    pub(crate) audit_retain_bytes: Option<Entry<u64>>,
    pub(crate) audit_checkpoint_key: Option<Entry<String>>,
    pub(crate) audit_checkpoint_path: Option<Entry<String>>,
    pub(crate) audit_checkpoint_every_records: Option<Entry<u64>>,
    pub(crate) audit_checkpoint_every_ms: Option<Entry<u64>>,
    pub(crate) syslog_address: Option<Entry<String>>,
    pub(crate) syslog_facility: Option<Entry<u8>>,
    pub(crate) syslog_format: Option<Entry<MsgFormat>>,
    pub(crate) syslog_queue: Option<Entry<u64>>,
    pub(crate) syslog_sd_id: Option<Entry<String>>,
    pub(crate) syslog_max_message: Option<Entry<u64>>,

    pub(crate) sb_mode: Option<Entry<SandboxMode>>,
    pub(crate) sb_read: Strings,
    pub(crate) sb_write: Strings,
    pub(crate) sb_network: Option<Entry<RawNetwork>>,
    pub(crate) sb_env: Strings,
    pub(crate) sb_root_access: Option<Entry<Access>>,
    pub(crate) sb_follow_roots: Option<Entry<FollowRoots>>,
    pub(crate) sb_read_only_roots: Strings,
    pub(crate) sb_grant_env: Strings,
    pub(crate) sb_grant_read: Strings,
    pub(crate) sb_grant_write: Strings,
    pub(crate) sb_read_only_paths: Strings,
    pub(crate) sb_nofile: Option<Entry<u64>>,
    pub(crate) sb_address_space: Option<Entry<u64>>,
    pub(crate) sb_cpu_seconds: Option<Entry<u64>>,
    pub(crate) sb_processes: Option<Entry<u64>>,

    pub(crate) tel_endpoint: Option<Entry<String>>,
    pub(crate) tel_protocol: Option<Entry<&'static str>>,
    pub(crate) tel_service_name: Option<Entry<String>>,
    pub(crate) tel_resource_attributes: Option<Entry<String>>,
}

/// Parses one layer. Returns `None` when the file is not TOML at all (the syntax error is
/// pushed); otherwise a `RawLayer` with every well-formed value, and every shape error
/// pushed to `errs`.
pub(crate) fn parse_layer(src: &Source<'_>, errs: &mut Vec<PolicyError>) -> Option<RawLayer> {
    // `parse` (not `parse_recoverable`): after a syntax error the recovered tree and the
    // follow-on errors mostly describe the parser's confusion, not the user's mistakes.
    let doc = match DeTable::parse(src.text) {
        Ok(doc) => doc,
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            let msg = format!("invalid TOML: {}", e.message());
            let hint = "fix the TOML syntax; the rest of this file is checked once it parses";
            errs.push(src.error(&span, ErrorKind::Syntax, msg).hint(hint));
            return None;
        }
    };
    let mut w = Walker { src, errs };
    let top = doc.get_ref();
    let mut raw = RawLayer::default();
    w.check_keys(top, "");

    raw.version = w.int(top, "", "version");
    match &raw.version {
        None => w.fail(
            &(0..0),
            ErrorKind::Version,
            "missing `version`".into(),
            format!("add `version = {SCHEMA_VERSION}` at the top of the file"),
        ),
        Some(v) if v.v != SCHEMA_VERSION => w.fail(
            &v.span,
            ErrorKind::Version,
            format!("unsupported policy schema version {}", v.v),
            format!("this rootfence understands `version = {SCHEMA_VERSION}`; see docs/policy.md"),
        ),
        Some(_) => {}
    }
    raw.base = w.string(top, "", "base");
    raw.mode = w.word(top, "", "mode", Mode::WORDS);

    if let Some(t) = w.table(top, "", "roots") {
        raw.roots_allow = w.strings(t, "roots", "allow");
        raw.roots_deny = w.strings(t, "roots", "deny");
        raw.roots_other_homes = w.strings(t, "roots", "other_homes");
        raw.roots_static = w.strings(t, "roots", "static");
        raw.roots_list_timeout_ms = w.uint(t, "roots", "list_timeout_ms", 1, 600_000);
        raw.roots_launch_wait_ms = w.uint(t, "roots", "launch_wait_ms", 0, 600_000);
        raw.roots_on_timeout = w.word(t, "roots", "on_timeout", RootsFallback::WORDS);
        raw.roots_symlinks = w.word(t, "roots", "symlinks", SymlinkStance::WORDS);
        raw.roots_hardlinks = w.word(t, "roots", "hardlinks", HardlinkStance::WORDS);
        raw.roots_from_command = w.word(t, "roots", "from_command", CommandRoots::WORDS);
    }
    if let Some(t) = w.table(top, "", "resources") {
        raw.res_other_schemes = w.schemes(t);
        raw.res_allow = w.strings(t, "resources", "allow");
        raw.res_deny = w.strings(t, "resources", "deny");
        raw.res_max_bytes = w.size(t, "resources", "max_bytes");
        raw.res_mime = w.strings(t, "resources", "mime");
        raw.res_read = w.word(t, "resources", "read", ReadStance::WORDS);
    }
    if let Some(t) = w.table(top, "", "tools") {
        raw.tools_deny = w.strings(t, "tools", "deny");
        raw.tools_writing = w.strings(t, "tools", "writing");
        raw.tools_read_only = w.boolean(t, "tools", "read_only");
        raw.tools_paths = w.tool_paths(t);
        raw.tools_infer = w.word(t, "tools", "infer", ToolInfer::WORDS);
        raw.tools_infer_for = w.infer_for(t);
    }
    if let Some(t) = w.table(top, "", "audit") {
        raw.audit_path = w.string(t, "audit", "path");
        raw.audit_fsync = w.word(t, "audit", "fsync", FSYNC_WORDS);
        raw.audit_fsync_interval_ms = w.uint(t, "audit", "fsync_interval_ms", 1, 3_600_000);
        raw.audit_rotate_bytes = w.size(t, "audit", "rotate_bytes");
        raw.audit_on_failure = w.word(t, "audit", "on_failure", OnFailure::WORDS);
        raw.audit_log_allowed = w.boolean(t, "audit", "log_allowed");
        raw.audit_allowed = w.word(t, "audit", "allowed", AllowedRecords::WORDS);
        raw.audit_retain_files = w.uint(t, "audit", "retain_files", 0, 1_000_000);
        raw.audit_retain_bytes = w.size(t, "audit", "retain_bytes");
        raw.audit_checkpoint_key = w.string(t, "audit", "checkpoint_key");
        raw.audit_checkpoint_path = w.string(t, "audit", "checkpoint_path");
        raw.audit_checkpoint_every_records =
            w.uint(t, "audit", "checkpoint_every_records", 1, 100_000_000);
        raw.audit_checkpoint_every_ms = w.uint(t, "audit", "checkpoint_every_ms", 100, 86_400_000);
        if let Some(sy) = w.table(t, "audit", "syslog") {
            raw.syslog_address = w.string(sy, "audit.syslog", "address");
            raw.syslog_facility = w.word(sy, "audit.syslog", "facility", FACILITIES);
            raw.syslog_format = w.word(sy, "audit.syslog", "format", MsgFormat::WORDS);
            raw.syslog_queue = w.uint(sy, "audit.syslog", "queue", 16, 10_000_000);
            raw.syslog_sd_id = w.string(sy, "audit.syslog", "sd_id");
            raw.syslog_max_message = w.uint(
                sy,
                "audit.syslog",
                "max_message",
                crate::audit::syslog::MIN_MAX_MESSAGE as u64,
                64 << 20,
            );
        }
    }
    if let Some(t) = w.table(top, "", "sandbox") {
        raw.sb_mode = w.word(t, "sandbox", "mode", SandboxMode::WORDS);
        raw.sb_read = w.strings(t, "sandbox", "read");
        raw.sb_write = w.strings(t, "sandbox", "write");
        raw.sb_network = w.network(t);
        raw.sb_env = w.strings(t, "sandbox", "env");
        raw.sb_root_access = w.word(t, "sandbox", "root_access", Access::WORDS);
        raw.sb_follow_roots = w.word(t, "sandbox", "follow_roots", FollowRoots::WORDS);
        raw.sb_read_only_roots = w.strings(t, "sandbox", "read_only_roots");
        raw.sb_read_only_paths = w.strings(t, "sandbox", "read_only_paths");
        if let Some(r) = w.table(t, "sandbox", "rlimits") {
            raw.sb_nofile = w.uint(r, "sandbox.rlimits", "nofile", 1, u64::MAX);
            raw.sb_address_space = w.size(r, "sandbox.rlimits", "address_space");
            raw.sb_cpu_seconds = w.uint(r, "sandbox.rlimits", "cpu_seconds", 1, u64::MAX);
            raw.sb_processes = w.uint(r, "sandbox.rlimits", "processes", 1, u64::MAX);
        }
        if let Some(g) = w.table(t, "sandbox", "grantable") {
            raw.sb_grant_env = w.strings(g, "sandbox.grantable", "env");
            raw.sb_grant_read = w.strings(g, "sandbox.grantable", "read");
            raw.sb_grant_write = w.strings(g, "sandbox.grantable", "write");
        }
    }
    if let Some(t) = w.table(top, "", "telemetry") {
        raw.tel_endpoint = w.string(t, "telemetry", "endpoint");
        const PROTOCOLS: &[(&str, &str)] = &[("http/protobuf", "http/protobuf")];
        raw.tel_protocol = w.word(t, "telemetry", "protocol", PROTOCOLS);
        raw.tel_service_name = w.string(t, "telemetry", "service_name");
        raw.tel_resource_attributes = w.string(t, "telemetry", "resource_attributes");
    }
    Some(raw)
}

/// The `'static` dotted name of a key of the schema (`roots.allow`, or a sub-table such as
/// `audit.syslog`): a prefix of its declaration's key, so nothing is allocated.
fn dotted(table: &str, key: &str) -> &'static str {
    for s in SETTINGS {
        let rest = if table.is_empty() {
            Some(s.key)
        } else {
            s.key.strip_prefix(table).and_then(|r| r.strip_prefix('.'))
        };
        if rest.is_some_and(|r| r.split('.').next() == Some(key)) {
            let len = if table.is_empty() {
                key.len()
            } else {
                table.len() + 1 + key.len()
            };
            return &s.key[..len];
        }
    }
    "?"
}

type Item<'t, 'i> = (
    &'t Spanned<toml::de::DeString<'i>>,
    &'t Spanned<DeValue<'i>>,
);

struct Walker<'a, 's> {
    src: &'a Source<'s>,
    errs: &'a mut Vec<PolicyError>,
}

impl Walker<'_, '_> {
    fn fail(&mut self, span: &Range<usize>, kind: ErrorKind, msg: String, hint: impl Into<String>) {
        self.errs.push(self.src.error(span, kind, msg).hint(hint));
    }

    fn check_keys(&mut self, table: &DeTable<'_>, name: &str) {
        let known = schema::keys_of(name);
        for (k, _) in table.iter() {
            let key: &str = k.get_ref();
            if known.contains(&key) {
                continue;
            }
            let where_ = if name.is_empty() {
                "at the top level".to_string()
            } else {
                format!("in [{name}]")
            };
            let msg = format!("unknown key `{key}` {where_}");
            self.fail(
                &k.span(),
                ErrorKind::UnknownKey,
                msg,
                did_you_mean(name, key, &known),
            );
        }
    }

    fn find<'t, 'i>(table: &'t DeTable<'i>, key: &str) -> Option<Item<'t, 'i>> {
        table.iter().find(|(k, _)| {
            let s: &str = k.get_ref();
            s == key
        })
    }

    fn wrong_type(&mut self, span: &Range<usize>, key: &str, want: &str, got: &DeValue<'_>) {
        let msg = format!("`{key}` must be {want}, found {}", got.type_str());
        let hint = format!("write `{key}` as {want}; see docs/policy.md for the schema");
        self.fail(span, ErrorKind::WrongType, msg, hint);
    }

    fn entry<T>(
        &self,
        key: &'static str,
        k: &Spanned<toml::de::DeString<'_>>,
        v: T,
        span: Range<usize>,
    ) -> Entry<T> {
        Entry {
            key,
            key_span: k.span(),
            v,
            span,
        }
    }

    /// The sub-table `key` of `table` (named `tname`), its keys checked.
    fn table<'t, 'i>(
        &mut self,
        table: &'t DeTable<'i>,
        tname: &str,
        key: &str,
    ) -> Option<&'t DeTable<'i>> {
        let (_, v) = Self::find(table, key)?;
        match v.get_ref() {
            DeValue::Table(t) => {
                self.check_keys(t, dotted(tname, key));
                Some(t)
            }
            other => {
                let name = dotted(tname, key);
                self.wrong_type(&v.span(), name, "a table", other);
                None
            }
        }
    }

    fn string(&mut self, table: &DeTable<'_>, tname: &str, key: &str) -> Option<Entry<String>> {
        let (k, v) = Self::find(table, key)?;
        let name = dotted(tname, key);
        match v.get_ref() {
            DeValue::String(s) => Some(self.entry(name, k, s.to_string(), v.span())),
            other => {
                self.wrong_type(&v.span(), name, "a string", other);
                None
            }
        }
    }

    fn strings(
        &mut self,
        table: &DeTable<'_>,
        tname: &str,
        key: &str,
    ) -> Option<Entry<Vec<Sp<String>>>> {
        let (k, v) = Self::find(table, key)?;
        let name = dotted(tname, key);
        let DeValue::Array(items) = v.get_ref() else {
            self.wrong_type(&v.span(), name, "an array of strings", v.get_ref());
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for item in items.iter() {
            match item.get_ref() {
                DeValue::String(s) => out.push(Sp {
                    v: s.to_string(),
                    span: item.span(),
                }),
                other => {
                    ok = false;
                    self.wrong_type(&item.span(), name, "an array of strings", other);
                }
            }
        }
        // A list with a bad element is dropped whole: a partial deny list must never be
        // compiled (and the layer fails anyway, because an error was pushed).
        ok.then(|| self.entry(name, k, out, v.span()))
    }

    fn boolean(&mut self, table: &DeTable<'_>, tname: &str, key: &str) -> Option<Entry<bool>> {
        let (k, v) = Self::find(table, key)?;
        let name = dotted(tname, key);
        match v.get_ref() {
            DeValue::Boolean(b) => Some(self.entry(name, k, *b, v.span())),
            other => {
                self.wrong_type(&v.span(), name, "a boolean (true or false)", other);
                None
            }
        }
    }

    fn int(&mut self, table: &DeTable<'_>, tname: &str, key: &str) -> Option<Entry<i64>> {
        let (k, v) = Self::find(table, key)?;
        let name = dotted(tname, key);
        match v.get_ref() {
            DeValue::Integer(i) => match i64::from_str_radix(i.as_str(), i.radix()) {
                Ok(n) => Some(self.entry(name, k, n, v.span())),
                Err(_) => {
                    self.bad_value(&v.span(), name, "is out of range", "use a smaller integer");
                    None
                }
            },
            other => {
                self.wrong_type(&v.span(), name, "an integer", other);
                None
            }
        }
    }

    fn bad_value(&mut self, span: &Range<usize>, key: &str, what: &str, hint: &str) {
        self.fail(span, ErrorKind::BadValue, format!("`{key}` {what}"), hint);
    }

    fn uint(
        &mut self,
        table: &DeTable<'_>,
        tname: &str,
        key: &str,
        min: u64,
        max: u64,
    ) -> Option<Entry<u64>> {
        let e = self.int(table, tname, key)?;
        match u64::try_from(e.v) {
            Ok(n) if (min..=max).contains(&n) => Some(e.with(n)),
            _ => {
                let hint = if max == u64::MAX {
                    format!("use an integer of at least {min}")
                } else {
                    format!("use an integer from {min} to {max}")
                };
                self.bad_value(&e.span, e.key, "is out of range", &hint);
                None
            }
        }
    }

    /// A byte size: an integer, or a string such as `"16 MiB"`.
    fn size(&mut self, table: &DeTable<'_>, tname: &str, key: &str) -> Option<Entry<u64>> {
        let (k, v) = Self::find(table, key)?;
        let name = dotted(tname, key);
        let hint = "write a number of bytes, or a string such as \"16 MiB\" \
                    (units: B, KiB, MiB, GiB, TiB)";
        let parsed = match v.get_ref() {
            DeValue::Integer(i) => u64::from_str_radix(i.as_str(), i.radix()).ok(),
            DeValue::String(s) => parse_size(s),
            other => {
                self.wrong_type(&v.span(), name, "a size (integer or string)", other);
                return None;
            }
        };
        match parsed {
            Some(n) if n > 0 => Some(self.entry(name, k, n, v.span())),
            _ => {
                self.bad_value(&v.span(), name, "is not a valid positive size", hint);
                None
            }
        }
    }

    fn word<T: Copy>(
        &mut self,
        table: &DeTable<'_>,
        tname: &str,
        key: &str,
        words: &[(&str, T)],
    ) -> Option<Entry<T>> {
        let e = self.string(table, tname, key)?;
        if let Some((_, w)) = words.iter().find(|(w, _)| *w == e.v) {
            return Some(e.with(*w));
        }
        let list: Vec<String> = words.iter().map(|(w, _)| format!("\"{w}\"")).collect();
        let msg = format!("`{}` has no value \"{}\"", e.key, e.v);
        let hint = format!("use one of {}", list.join(", "));
        self.fail(&e.span, ErrorKind::BadValue, msg, hint);
        None
    }

    /// A key written as "allow" or "deny", as `allow` or `deny`.
    fn allow_deny<T>(
        &mut self,
        table: &DeTable<'_>,
        tname: &str,
        key: &str,
        allow: T,
        deny: T,
    ) -> Option<Entry<T>> {
        let e = self.word(table, tname, key, ALLOW_DENY)?;
        let v = if e.v { allow } else { deny };
        Some(e.with(v))
    }

    fn schemes(&mut self, table: &DeTable<'_>) -> Option<Entry<RawSchemes>> {
        let (_, v) = Self::find(table, "other_schemes")?;
        let name = "resources.other_schemes";
        match v.get_ref() {
            DeValue::String(_) => {
                let (allow, deny) = (RawSchemes::Allow, RawSchemes::Deny);
                self.allow_deny(table, "resources", "other_schemes", allow, deny)
            }
            DeValue::Array(_) => {
                let list = self.strings(table, "resources", "other_schemes")?;
                Some(list.map(RawSchemes::List))
            }
            other => {
                self.wrong_type(
                    &v.span(),
                    name,
                    "\"allow\", \"deny\" or an array of scheme names",
                    other,
                );
                None
            }
        }
    }

    fn network(&mut self, table: &DeTable<'_>) -> Option<Entry<RawNetwork>> {
        let (k, v) = Self::find(table, "network")?;
        let name = "sandbox.network";
        match v.get_ref() {
            DeValue::String(_) => {
                let (allow, deny) = (RawNetwork::Allow, RawNetwork::Deny);
                self.allow_deny(table, "sandbox", "network", allow, deny)
            }
            DeValue::Array(items) => {
                let mut ports = Vec::new();
                let mut ok = true;
                for item in items.iter() {
                    let port = match item.get_ref() {
                        DeValue::Integer(i) => u16::from_str_radix(i.as_str(), i.radix())
                            .ok()
                            .filter(|p| *p > 0),
                        other => {
                            self.wrong_type(&item.span(), name, "an array of TCP ports", other);
                            ok = false;
                            continue;
                        }
                    };
                    match port {
                        Some(p) => ports.push(Sp {
                            v: p,
                            span: item.span(),
                        }),
                        None => {
                            ok = false;
                            self.bad_value(
                                &item.span(),
                                name,
                                "has a port out of range",
                                "TCP ports are 1 to 65535",
                            );
                        }
                    }
                }
                ok.then(|| self.entry(name, k, RawNetwork::Ports(ports), v.span()))
            }
            other => {
                self.wrong_type(
                    &v.span(),
                    name,
                    "\"allow\", \"deny\" or an array of TCP ports",
                    other,
                );
                None
            }
        }
    }

    /// The entries of an array of tables (`[[tools.paths]]`), each checked for unknown keys
    /// and for the keys it requires (a missing one is reported at the entry, with `hint`).
    fn entries<'t, 'i>(
        &mut self,
        table: &'t DeTable<'i>,
        name: &'static str,
        required: &[&str],
        hint: &str,
    ) -> Vec<&'t DeTable<'i>> {
        let key = name.rsplit('.').next().unwrap_or(name);
        let Some((_, v)) = Self::find(table, key) else {
            return Vec::new();
        };
        let what = format!("an array of tables ([[{name}]])");
        let DeValue::Array(items) = v.get_ref() else {
            self.wrong_type(&v.span(), name, &what, v.get_ref());
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in items.iter() {
            let DeValue::Table(t) = item.get_ref() else {
                self.wrong_type(&item.span(), name, &what, item.get_ref());
                continue;
            };
            self.check_keys(t, name);
            for key in required.iter().filter(|k| Self::find(t, k).is_none()) {
                let msg = format!("[[{name}]] entry without `{key}`");
                let err = self.src.error(&item.span(), ErrorKind::BadValue, msg);
                self.errs.push(err.hint(hint));
            }
            out.push(t);
        }
        out
    }

    fn infer_for(&mut self, table: &DeTable<'_>) -> Vec<RawInferFor> {
        let hint = "each [[tools.infer_for]] needs `tool = \"<name glob>\"` and \
                    `infer = \"strict\"`, `\"schema\"` or `\"off\"`";
        let name = "tools.infer_for";
        let tables = self.entries(table, name, &["tool", "infer"], hint);
        tables
            .into_iter()
            .map(|t| RawInferFor {
                tool: self.string(t, name, "tool"),
                infer: self.word(t, name, "infer", ToolInfer::WORDS),
            })
            .collect()
    }

    fn tool_paths(&mut self, table: &DeTable<'_>) -> Vec<RawToolPath> {
        let hint = "each [[tools.paths]] needs `tool = \"<name glob>\"` and \
                    `pointers = [\"/json/pointer\", ...]`";
        let name = "tools.paths";
        let tables = self.entries(table, name, &["tool", "pointers"], hint);
        tables
            .into_iter()
            .map(|t| RawToolPath {
                tool: self.string(t, name, "tool"),
                pointers: self.strings(t, name, "pointers"),
                kind: self.word(t, name, "kind", ARG_KIND_WORDS),
                server: self.string(t, name, "server"),
            })
            .collect()
    }
}

/// Parses `"123"`, `"16 MiB"`, `"1GiB"`. Binary units only, so "MB" is never ambiguous.
pub(crate) fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mul: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        _ => return None,
    };
    n.checked_mul(mul)
}

/// A hint for an unknown key: the nearest known key in this table, or a table where the
/// key does exist, or the list of known keys.
fn did_you_mean(table: &str, key: &str, known: &[&str]) -> String {
    if let Some(best) = known
        .iter()
        .filter(|k| edit_distance(&key.to_ascii_lowercase(), k) <= 2)
        .min_by_key(|k| edit_distance(key, k))
    {
        return format!("did you mean `{best}`?");
    }
    for t in schema::tables() {
        if t != table && !t.is_empty() && schema::keys_of(t).contains(&key) {
            return format!("`{key}` belongs in [{t}]");
        }
    }
    let list: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
    format!("known keys here: {}", list.join(", "))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Option<RawLayer>, Vec<PolicyError>) {
        let src = Source::new("t.toml".into(), text);
        let mut errs = Vec::new();
        let raw = parse_layer(&src, &mut errs);
        (raw, errs)
    }

    #[test]
    fn sizes() {
        for (s, want) in [
            ("12", Some(12)),
            ("16 MiB", Some(16 << 20)),
            ("1GiB", Some(1 << 30)),
            ("1 MB", None),
            ("-1", None),
            ("", None),
            ("99999999999999 TiB", None),
        ] {
            assert_eq!(parse_size(s), want, "{s}");
        }
    }

    #[test]
    fn every_unknown_key_and_type_error_is_reported_at_once() {
        let (_, errs) = parse(
            "version = 1\nmod = \"audit\"\n[roots]\nalow = []\nsymlinks = 3\n\
             [resources]\ndeny = [\"**/.env\", 4]\n[sandbox.rlimits]\ncpu = 1\n",
        );
        let kinds: Vec<_> = errs.iter().map(|e| (e.kind, e.line)).collect();
        assert!(
            kinds.contains(&(ErrorKind::UnknownKey, Some(2))),
            "{errs:#?}"
        );
        assert!(kinds.contains(&(ErrorKind::UnknownKey, Some(4))));
        assert!(kinds.contains(&(ErrorKind::WrongType, Some(5))));
        assert!(kinds.contains(&(ErrorKind::WrongType, Some(7))));
        assert!(kinds.contains(&(ErrorKind::UnknownKey, Some(9))));
        assert_eq!(errs.len(), 5, "{errs:#?}");
        assert!(
            errs.iter()
                .any(|e| e.hint.as_deref() == Some("did you mean `mode`?"))
        );
        assert!(
            errs.iter()
                .any(|e| e.hint.as_deref() == Some("did you mean `allow`?"))
        );
    }

    #[test]
    fn missing_and_wrong_version() {
        let (_, errs) = parse("mode = \"audit\"\n");
        assert_eq!(errs[0].kind, ErrorKind::Version);
        let (_, errs) = parse("version = 2\n");
        assert_eq!(errs[0].kind, ErrorKind::Version);
        assert_eq!(errs[0].line, Some(1));
    }

    #[test]
    fn key_in_wrong_table_is_pointed_at_its_table() {
        let (_, errs) = parse("version = 1\n[roots]\nmax_bytes = 3\n");
        assert_eq!(
            errs[0].hint.as_deref(),
            Some("`max_bytes` belongs in [resources]")
        );
    }

    #[test]
    fn dotted_names_are_static() {
        assert_eq!(dotted("roots", "allow"), "roots.allow");
        assert_eq!(dotted("", "mode"), "mode");
        assert_eq!(
            dotted("sandbox.rlimits", "nofile"),
            "sandbox.rlimits.nofile"
        );
    }
}
