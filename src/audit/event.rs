//! The audit events: what a record may say, as types.
//!
//! The types are the secrecy boundary: there is no field for file contents, message bodies,
//! tool argument values or environment variables, only checked URIs and paths, method names,
//! ids, codes and counts. A value that does not fit a field cannot be logged.
//!
//! Every string that reaches a log line is escaped by `escape_line` after serialization:
//! serde_json escapes `"`, `\` and C0 controls, and this module additionally escapes DEL, C1
//! controls, the line and paragraph separators (U+2028, U+2029) and the bidi controls
//! (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), so a URI cannot end a line, forge
//! another record or reorder what a reviewer sees in an editor or terminal.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod decision;
mod escape;
mod values;

pub use decision::{Action, Decision, DecisionRef, Direction, Verdict};
pub(crate) use escape::{escape_json_display, escape_line, is_unsafe_display_char};
pub(crate) use values::head;
pub use values::{AuditUri, RpcId};
use values::{cut, redact_command, ser_opt_text, ser_text};

/// Longest URI kept verbatim in a record, in bytes. A longer one is cut at a character
/// boundary and marked with its full length and SHA-256, so a hostile server cannot fill the
/// disk (and stop the session) through the audit log with a few huge URIs.
pub const MAX_URI_BYTES: usize = 4096;

/// Longest free-text field (method names, details) kept verbatim, in bytes.
pub const MAX_TEXT_BYTES: usize = 512;

/// The audit events, one row each: the record's `event` name, its variant and fields, who
/// writes it (`caller`: anyone holding an [`Auditor`](super::Auditor); `log`: only the log
/// itself, so [`Auditor::record`](super::Auditor::record) refuses it) and whether the
/// default fsync policy syncs before acknowledging it (`sync`, `deny` for a denial only).
/// The enum, its parser and these properties are derived from the rows.
macro_rules! events {
    ($($(#[doc = $doc:literal])* $name:literal => $variant:ident, $by:ident, $sync:ident;)*) => {
        /// One audit event. Each variant is one `event` name in the schema: serde writes it
        /// as the record's `event` member, before the variant's fields.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[serde(tag = "event")]
        #[non_exhaustive]
        pub enum Event {
            $($(#[doc = $doc])* #[serde(rename = $name)] $variant($variant),)*
        }

        impl Event {
            /// The record's `event` name.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Event::$variant(_) => $name,)*
                }
            }

            /// Whether only the log itself writes this event.
            pub(crate) fn is_reserved(&self) -> bool {
                match self {
                    $(Event::$variant(_) => stringify!($by) == "log",)*
                }
            }

            /// Whether the default fsync policy syncs before acknowledging this record.
            pub(crate) fn is_critical(&self) -> bool {
                let denied = matches!(self, Event::Decision(d) if d.decision == Verdict::Deny);
                match self {
                    $(Event::$variant(_) => match stringify!($sync) {
                        "deny" => denied,
                        sync => sync == "sync",
                    },)*
                }
            }

            /// Parses the event from a record's body, `{"event":"<name>",...}`, given its
            /// name. `Ok(None)` for an event name this version does not know (a newer
            /// writer).
            pub(crate) fn from_body(
                name: &str,
                body: &[u8],
            ) -> Result<Option<Event>, serde_json::Error> {
                Ok(Some(match name {
                    $($name => Event::$variant(serde_json::from_slice(body)?),)*
                    _ => return Ok(None),
                }))
            }
        }
    };
}

events! {
    /// `session_start`: the first record of a session (written by [`AuditLog::open`]).
    ///
    /// [`AuditLog::open`]: super::AuditLog::open
    "session_start" => SessionStart, log, sync;
    /// `initialized`: the negotiated protocol revision and the peers' names, once known.
    "initialized" => Initialized, caller, lazy;
    /// `roots_update`: the host's roots arrived or changed and the effective roots moved.
    "roots_update" => RootsUpdate, caller, lazy;
    /// `server_start`: a server generation started: the first when the roots to confine it
    /// to were known, another each time the effective roots' grants changed.
    "server_start" => ServerStart, caller, sync;
    /// `decision`: one URI checked, with its provenance and what was done.
    "decision" => Decision, caller, deny;
    /// `protocol_error`: a line or message that could not be relayed as is.
    "protocol_error" => ProtocolError, caller, lazy;
    /// `session_end`: the last record of a session (written by [`AuditLog::close`]).
    ///
    /// [`AuditLog::close`]: super::AuditLog::close
    "session_end" => SessionEnd, log, sync;
    /// `log_recovered`: written by the writer itself after it found a torn final line.
    "log_recovered" => LogRecovered, log, sync;
    /// `log_rewound`: written by the writer itself when the log it is writing lost records
    /// from its end (truncated, or replaced) while it was open.
    "log_rewound" => LogRewound, log, sync;
    /// `decision_summary`: the allowed entries of one list page, counted instead of one
    /// `decision` each (`audit.allowed = "summary"`); the page's denials have their own records.
    "decision_summary" => DecisionSummary, caller, lazy;
    /// `protocol_error_repeated`: the protocol errors of one kind that followed a logged one
    /// within an interval, counted (written by the log itself).
    "protocol_error_repeated" => ProtocolErrorRepeated, log, lazy;
    /// `log_pruned`: written by the writer itself when retention removed old rotated files.
    "log_pruned" => LogPruned, log, sync;
    /// `sink_dropped`: records a shipping sink (syslog) could not take, counted (written by
    /// the log itself, at most once per interval).
    "sink_dropped" => SinkDropped, log, lazy;
    /// `policy_reload`: a policy reload was asked for (SIGHUP): applied, or refused with why.
    "policy_reload" => PolicyReload, caller, sync;
}

impl Event {
    /// Serializes the event's part of a line: `"event":"<name>",<fields>}` (escaped, without
    /// the envelope's opening and without the newline).
    pub(crate) fn write_body(&self, out: &mut Vec<u8>) {
        let start = out.len();
        // Serializing these types to a Vec cannot fail: no maps with non-string keys, no
        // custom Serialize that errors.
        let r = serde_json::to_writer(&mut *out, self);
        debug_assert!(r.is_ok());
        // `{"event":"<name>",<fields>}` less its opening brace.
        out.remove(start);
        escape_line(out, start);
    }

    /// [`write_body`](Self::write_body) into a new buffer.
    pub(crate) fn body(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(512);
        self.write_body(&mut out);
        out
    }
}

/// The body of a decision borrowed on the hot path, as [`Event::write_body`] writes the
/// owned one: `"event":"decision",<fields>}`, the fields written by
/// [`DecisionRef::write_json`] rather than serde (the same bytes).
pub(crate) fn write_named_decision(d: &DecisionRef<'_>, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(b"\"event\":\"decision\"");
    let fields_at = out.len();
    d.write_json(out);
    // The struct came out as `{...}` (never empty): its `{` becomes the `,` after the name.
    out[fields_at] = b',';
    escape_line(out, start);
}

/// `session_start` fields.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionStart {
    /// rootfence's version.
    pub rootfence_version: String,
    /// rootfence's process id.
    pub pid: u32,
    /// The server command line (argv, lossily UTF-8). Arguments that look like secrets
    /// (`--token x`, `--api-key=x`, `PASSWORD=x`) are replaced by `<redacted>`.
    pub command: Vec<String>,
    /// The working directory the server was started in.
    pub cwd: String,
    /// The policy files in effect, in layer order, with the SHA-256 of the bytes read.
    pub policy_files: Vec<PolicyFile>,
    /// `enforce` or `audit` (decide and log, block nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The effective roots at start (operator roots; host roots arrive in `roots_update`).
    pub effective_roots: Vec<AuditUri>,
    /// The sandbox enforcement report, when a sandbox was requested.
    pub sandbox: Option<SandboxReport>,
    /// The protocol revision, when already known at start (usually it is not, and the
    /// `initialized` record carries it).
    pub protocol_version: Option<String>,
    /// Who the session acts for, when known at start (`rootfence serve`: the token, the
    /// client's address, the HTTP session; a stdio host says who it is in `initialize`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<super::Principal>,
}

impl SessionStart {
    /// A start record for `command` run in `cwd`, with this build's version and pid; the
    /// caller fills in policies, roots and the sandbox report. Secret-looking arguments are
    /// redacted here.
    pub fn new(command: &[std::ffi::OsString], cwd: &std::path::Path) -> Self {
        Self {
            rootfence_version: env!("CARGO_PKG_VERSION").to_owned(),
            pid: std::process::id(),
            command: redact_command(command),
            cwd: cwd.to_string_lossy().into_owned(),
            ..Self::default()
        }
    }
}

/// A policy file and the SHA-256 (lowercase hex) of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PolicyFile {
    /// Its path as given.
    pub path: String,
    /// SHA-256 of the bytes read, lowercase hex.
    pub sha256: String,
}

/// The sandbox's enforcement report, as logged (mapped from the sandbox module's report).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SandboxReport {
    /// Requested mode: `off`, `best-effort` or `strict`.
    pub mode: String,
    /// The Landlock ABI version found, if any.
    pub landlock_abi: Option<u32>,
    /// `full`, `partial` or `none`.
    pub enforcement: String,
    /// Paths granted to the child and the rights on each (e.g. `read`, `read_write`).
    pub paths: Vec<SandboxPath>,
    /// Network state, e.g. `deny`, `allow`, `tcp:443,8080`, `unrestricted (ABI < 4)`.
    pub network: String,
    /// Resource limits applied, by name (`nofile`, `as`, `cpu`, `nproc`).
    pub rlimits: std::collections::BTreeMap<String, u64>,
    /// What was requested but is not enforced, in words.
    pub missing: Vec<String>,
}

/// One path the sandbox grants.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SandboxPath {
    /// The path.
    pub path: String,
    /// The rights granted.
    pub access: String,
    /// Why it is granted: `root`, `read`, `write`, `private-tmp`, or `profile: <reason>`
    /// (e.g. `profile: project of the script /w/srv/index.js`). Absent in older records.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub origin: String,
}

/// `initialized` fields.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Initialized {
    /// The negotiated protocol revision, e.g. `2025-06-18`.
    pub protocol_version: String,
    /// The host's `clientInfo`, as it claimed.
    pub host: Option<PeerInfo>,
    /// The server's `serverInfo`, as it claimed.
    pub server: Option<PeerInfo>,
    /// stdio: the principal the host's `clientInfo` claims (not authenticated); `serve` on a
    /// pre-started server: the principal of the client that took it. Absent when the
    /// session's `session_start` named the principal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<super::Principal>,
}

/// A peer's self-description (untrusted text, escaped and cut to [`MAX_TEXT_BYTES`]).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PeerInfo {
    /// `name`.
    #[serde(serialize_with = "ser_text")]
    pub name: String,
    /// `version`.
    #[serde(serialize_with = "ser_text")]
    pub version: String,
}

/// `roots_update` fields.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RootsUpdate {
    /// What brought the update: e.g. `roots_list_result`, `list_changed`, `input_response`,
    /// `timeout`.
    pub trigger: String,
    /// The roots the host sent, as sent.
    pub received: Vec<AuditUri>,
    /// Roots dropped, each with a reason code.
    pub dropped: Vec<DroppedRoot>,
    /// Host roots narrowed to the operator roots inside them.
    pub narrowed: Vec<NarrowedRoot>,
    /// The effective roots afterwards.
    pub effective: Vec<AuditUri>,
    /// Effective roots the OS sandbox did not grant at launch: the server process cannot
    /// reach them (the sandbox cannot widen mid-session), whatever the protocol allows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside_sandbox: Vec<AuditUri>,
}

/// `server_start` fields.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerStart {
    /// 1 for the first server process of the session, then one more per restart.
    pub generation: u32,
    /// What started it: `launch` (the first), or the roots update that moved the grants
    /// (`list_changed`, `input_response`, `timeout`, ...).
    pub trigger: String,
    /// The effective roots it is confined to.
    pub roots: Vec<AuditUri>,
    /// The sandbox enforcement report of this process.
    pub sandbox: Option<SandboxReport>,
    /// How its `initialize` answer differs from the first generation's, in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
    /// Subscriptions the new generation did not take again, by URI.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lost_subscriptions: Vec<String>,
}

/// A dropped root and why.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DroppedRoot {
    /// The root as received.
    pub uri: AuditUri,
    /// Reason code, e.g. `not_file_scheme`, `outside_operator_roots`, `denied_by_policy`.
    pub reason: String,
}

/// A host root narrowed to the operator roots it contains.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NarrowedRoot {
    /// The root as received.
    pub uri: AuditUri,
    /// What it became.
    pub to: Vec<AuditUri>,
}

/// Kinds of protocol errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtocolErrorKind {
    /// Not JSON (or not UTF-8).
    InvalidJson,
    /// JSON, but not a valid JSON-RPC message (e.g. duplicate keys, bad id).
    InvalidMessage,
    /// Longer than the line limit.
    Oversized,
    /// A response whose id matches no pending request.
    UnmatchedResponse,
    /// A request reusing an id that is still pending.
    DuplicateId,
    /// Anything else (see `detail`); also what a reader shows for kinds it does not know.
    #[serde(other)]
    Other,
}

/// `protocol_error` fields. The offending bytes are never logged: only their length and
/// SHA-256, so the line can be matched against a capture without leaking it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolError {
    /// Which way the line was going.
    pub direction: Direction,
    /// What was wrong.
    pub kind: ProtocolErrorKind,
    /// rootfence's own description (never message content).
    #[serde(serialize_with = "ser_text")]
    pub detail: String,
    /// The line's length in bytes.
    pub len: u64,
    /// SHA-256 of the line, lowercase hex.
    pub sha256: Option<String>,
    /// The JSON-RPC id, when one could be read.
    pub id: Option<RpcId>,
}

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndCause {
    /// The host closed rootfence's stdin.
    HostClosed,
    /// The server exited.
    ServerExited,
    /// rootfence received a signal.
    Signal,
    /// The audit log failed and `on_failure = "stop"`.
    AuditFailure,
    /// Another error (see `detail`).
    Error,
    /// Not said; also what a reader shows for causes it does not know.
    #[default]
    #[serde(other)]
    Unknown,
}

/// `session_end` fields.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionEnd {
    /// Why the session ended.
    pub cause: EndCause,
    /// rootfence's own words on the cause, if any.
    pub detail: Option<String>,
    /// The server's exit code, if it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended the server, if one did.
    pub signal: Option<i32>,
    /// The negotiated protocol revision, if any.
    pub protocol_version: Option<String>,
    /// Counts; `allowed`, `denied`, `protocol_errors` and `records` are filled in by
    /// [`AuditLog::close`](super::AuditLog::close) (the values given are replaced).
    pub counts: Counts,
}

/// Per-session counts in `session_end`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Counts {
    /// Messages read from the host.
    pub from_host: u64,
    /// Messages read from the server.
    pub from_server: u64,
    /// Allowed decisions (logged or not).
    pub allowed: u64,
    /// Denied decisions.
    pub denied: u64,
    /// Protocol errors.
    pub protocol_errors: u64,
    /// Records this session wrote, including `session_start` and this `session_end`.
    pub records: u64,
}

/// `log_recovered` fields: the writer found that a log file ended with an incomplete line
/// (a crash mid-write, or a failed write) and set that file aside untouched.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LogRecovered {
    /// The file name (no directory) the damaged file was given.
    pub file: String,
    /// Byte offset of the incomplete line in it.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
    /// SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
}

/// `log_rewound` fields: a running writer had written (or seen) the chain up to
/// `expected_seq`, and then found the log ending at `found_seq`: records were removed from
/// its end, or the file was replaced, while rootfence had it open. The chain continues from
/// what is there; this record keeps the evidence.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LogRewound {
    /// The seq of the last record the writer knew of.
    pub expected_seq: u64,
    /// That record's SHA-256, lowercase hex.
    pub expected_hash: String,
    /// The seq of the last record now in the log (0: none).
    pub found_seq: u64,
}

/// Most directories a `decision_summary` names; the entries of any further directories
/// are counted in `dirs_omitted`.
pub const MAX_SUMMARY_DIRS: usize = 1024;

/// Most distinct keys in each count map of a `decision_summary` (reasons, rules, schemes);
/// further keys are counted under `"…"`.
pub const MAX_SUMMARY_KEYS: usize = 64;

/// `decision_summary` fields: the allowed entries of one list page (`resources/list`,
/// `resources/templates/list`), counted. Each denied entry of the page has its own
/// `decision` record; `denied` says how many.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionSummary {
    /// Which way the page was going.
    pub direction: Direction,
    /// The method of the request the page answers.
    #[serde(serialize_with = "ser_text")]
    pub method: String,
    /// The JSON-RPC id.
    pub id: Option<RpcId>,
    /// The session-unique key of the request the page answers (as on `decision`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<u64>,
    /// The list in the message, e.g. `result.resources`.
    pub field: String,
    /// Entries allowed (and forwarded): none of them has a record of its own.
    pub allowed: u64,
    /// Entries denied: each has its own `decision` record.
    pub denied: u64,
    /// Allowed entries by reason code.
    #[serde(default)]
    pub reasons: std::collections::BTreeMap<String, u64>,
    /// Allowed entries by deciding rule (`layer: rule`, or the rule alone).
    #[serde(default)]
    pub rules: std::collections::BTreeMap<String, u64>,
    /// Allowed `file:` entries by the directory that holds them (canonical), sorted.
    #[serde(default)]
    pub dirs: Vec<DirCount>,
    /// Allowed `file:` entries in directories beyond the first [`MAX_SUMMARY_DIRS`].
    #[serde(default)]
    pub dirs_omitted: u64,
    /// Allowed entries with no canonical `file:` URI (other schemes, templates), by scheme.
    #[serde(default)]
    pub other: std::collections::BTreeMap<String, u64>,
}

/// A directory and how many allowed entries of a page it holds.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DirCount {
    /// The directory, as a canonical `file:` URI.
    pub dir: AuditUri,
    /// Allowed entries in it.
    pub count: u64,
}

/// The first repeated occurrence in a `protocol_error_repeated` record, in full.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ProtocolErrorSample {
    /// rootfence's own description (never message content).
    #[serde(serialize_with = "ser_text")]
    pub detail: String,
    /// The line's length in bytes.
    pub len: u64,
    /// SHA-256 of the line, lowercase hex.
    pub sha256: Option<String>,
    /// The JSON-RPC id, when one could be read.
    pub id: Option<RpcId>,
}

/// `protocol_error_repeated` fields: protocol errors of one kind and direction that came
/// within an interval after one that was logged in full; written once per interval while
/// they keep coming, so a flood of bad lines costs the log a record per interval, not one
/// per line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolErrorRepeated {
    /// Which way the lines were going.
    pub direction: Direction,
    /// What was wrong with them.
    pub kind: ProtocolErrorKind,
    /// How many.
    pub count: u64,
    /// Their total length in bytes.
    pub bytes: u64,
    /// When the interval began (RFC 3339, as `ts`); the record's `ts` is when it ended.
    pub since: String,
    /// The first of them, in full.
    pub first: ProtocolErrorSample,
}

/// `log_pruned` fields: retention removed the oldest rotated files. The chain now starts at
/// `first_seq` (whose `prev` is `first_prev`) in `first_file`; `verify` accepts a chain that
/// starts there because this record says so.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LogPruned {
    /// The file names (no directory) removed, oldest first.
    pub removed: Vec<String>,
    /// Their total size in bytes.
    pub removed_bytes: u64,
    /// The file the chain now starts in (the oldest kept).
    pub first_file: String,
    /// The seq of the first record kept.
    pub first_seq: u64,
    /// That record's `prev`: the hash of the last record removed.
    pub first_prev: String,
}

/// `sink_dropped` fields: records a shipping sink could not take since the last such record
/// (its queue was full: the receiver down or slower than the log). The log itself keeps
/// every record; only the copy shipped elsewhere is missing.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SinkDropped {
    /// The sink: `syslog`.
    pub sink: String,
    /// Records dropped since the last `sink_dropped` record.
    pub dropped: u64,
    /// Records dropped by this session so far.
    pub total: u64,
    /// Why, in words (the last connection error, or "queue full").
    pub reason: String,
}

/// `policy_reload` fields: a reload of the policy files (SIGHUP). With `ok`, new decisions
/// use the new policy from this record on; without, the old policy stays and `error` says
/// why.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PolicyReload {
    /// Whether the new policy was applied.
    pub ok: bool,
    /// The layers as read (name or path, and SHA-256 of the text).
    pub policy_files: Vec<PolicyFile>,
    /// Why the reload was refused (the validation errors, as `policy check` prints them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Settings that changed but only take effect at the next server generation (the
    /// sandbox of the running server cannot change) or at the next session (the audit
    /// log's settings).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deferred: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(e: &Event) -> String {
        let mut v = Vec::new();
        e.write_body(&mut v);
        String::from_utf8(v).unwrap()
    }

    fn decision(uri: &str) -> Decision {
        Decision {
            direction: Direction::HostToServer,
            method: crate::mcp::methods::RESOURCES_READ.into(),
            id: RpcId::from_json("7"),
            request: None,
            principal: None,
            tool: None,
            field: Some("params.uri".into()),
            uri: uri.into(),
            canonical: None,
            decision: Verdict::Deny,
            reason: "outside_roots".into(),
            layer: None,
            rule: None,
            root: None,
            action: Action::AnsweredError,
        }
    }

    #[test]
    fn body_is_spliceable_json() {
        let e = Event::Decision(decision("file:///etc/passwd"));
        let b = body(&e);
        assert!(
            b.starts_with(r#""event":"decision","direction":"host_to_server""#),
            "{b}"
        );
        let obj = format!("{{{b}");
        let back = Event::from_body("decision", obj.as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(back, e);
        // `1` and `"1"` stay distinct.
        assert!(b.contains(r#""id":7"#));
        let s = RpcId::from_json(r#""7""#).unwrap();
        assert_eq!(serde_json::to_string(&s).unwrap(), r#""7""#);
    }

    #[test]
    fn a_borrowed_decision_is_the_same_record() {
        let long = format!("file:///{}\u{202e}", "a".repeat(5000));
        for (uri, id) in [
            ("file:///x", "7"),
            (long.as_str(), "\"abc\""),
            ("f\u{85}", "-3"),
        ] {
            let mut owned = decision(uri);
            owned.id = RpcId::from_json(id);
            owned.canonical = Some(uri.into());
            owned.rule = Some("line 3: x".into());
            owned.method = "m".repeat(600);
            owned.request = Some(12);
            owned.principal = Some("claimed:\u{202e}x".into());
            let id = owned.id.clone();
            let borrowed = DecisionRef {
                direction: owned.direction,
                method: &owned.method,
                id: id.as_ref(),
                request: owned.request,
                principal: owned.principal.as_deref(),
                tool: owned.tool.as_deref(),
                field: owned.field.as_deref(),
                uri,
                canonical: Some(uri),
                decision: owned.decision,
                reason: &owned.reason,
                layer: owned.layer.as_deref(),
                rule: owned.rule.as_deref(),
                root: None,
                action: owned.action,
            };
            let mut hand = Vec::new();
            write_named_decision(&borrowed, &mut hand);
            let owned = body(&Event::Decision(owned.clone()));
            assert_eq!(String::from_utf8(hand).unwrap(), owned);
        }
    }

    /// A decision's raw parts: direction, method, id, field, uri, canonical, verdict,
    /// reason, layer, rule, root, action.
    type Parts = (
        (
            Direction,
            String,
            Option<RpcId>,
            Option<String>,
            String,
            Option<String>,
        ),
        (
            Verdict,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
            Action,
        ),
        (Option<String>, Option<u64>, Option<String>),
    );

    fn any_parts() -> impl proptest::strategy::Strategy<Value = Parts> {
        use proptest::prelude::*;
        // Text with what a writer must escape or cut: quotes, backslashes, control and
        // format characters, DEL, non-ASCII, and now and then past the limits.
        let text = prop_oneof![
            8 => "[a-z/:%.\"\\\\\u{0}-\u{1f}\u{7f}\u{85}\u{202e}é😀 ]{0,40}",
            1 => "[a\"\u{1}é]{500,700}",
            1 => "[ab\\\\é]{4090,4110}",
        ];
        let id = prop_oneof![
            Just(None),
            any::<i64>().prop_map(|n| RpcId::from_json(&n.to_string())),
            text.clone()
                .prop_map(|t| RpcId::from_json(&serde_json::to_string(&t).unwrap())),
        ];
        let directions = prop_oneof![Just(Direction::HostToServer), Just(Direction::ServerToHost)];
        let verdicts = prop_oneof![Just(Verdict::Allow), Just(Verdict::Deny)];
        let actions = prop_oneof![
            Just(Action::Forwarded),
            Just(Action::Filtered),
            Just(Action::Rewritten),
            Just(Action::AnsweredError),
            Just(Action::Dropped),
        ];
        let opt = || proptest::option::of(text.clone());
        (
            (directions, text.clone(), id, opt(), text.clone(), opt()),
            (verdicts, text.clone(), opt(), opt(), opt(), actions),
            (opt(), proptest::option::of(any::<u64>()), opt()),
        )
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(512))]

        /// The hot path's hand-written record is the serde record of the same decision,
        /// owned.
        #[test]
        fn the_hand_written_decision_is_the_serde_record(p in any_parts()) {
            let ((direction, method, id, field, uri, canonical), (decision, reason, layer, rule, root, action), (tool, request, principal)) = p;
            let borrowed = DecisionRef {
                direction,
                method: &method,
                id: id.as_ref(),
                request,
                principal: principal.as_deref(),
                tool: tool.as_deref(),
                field: field.as_deref(),
                uri: &uri,
                canonical: canonical.as_deref(),
                decision,
                reason: &reason,
                layer: layer.as_deref(),
                rule: rule.as_deref(),
                root: root.as_deref(),
                action,
            };
            let mut hand = Vec::new();
            write_named_decision(&borrowed, &mut hand);
            let owned = Decision {
                direction,
                method: method.clone(),
                id: id.clone(),
                request,
                principal: principal.clone(),
                tool: tool.clone(),
                field: field.clone(),
                uri: uri.as_str().into(),
                canonical: canonical.as_deref().map(Into::into),
                decision,
                reason: reason.clone(),
                layer: layer.clone(),
                rule: rule.clone(),
                root: root.as_deref().map(Into::into),
                action,
            };
            proptest::prop_assert_eq!(String::from_utf8(hand).unwrap(), body(&Event::Decision(owned)));
        }
    }

    #[test]
    fn plain_ids_take_the_fast_path_and_say_the_same() {
        for raw in [
            "0",
            "-0",
            "42",
            "-17",
            "\"a b\"",
            "\"\"",
            "1.5",
            "01",
            "\"\\u0041\"",
            "\"é\"",
        ] {
            let slow = serde_json::from_str::<serde_json::Value>(raw)
                .ok()
                .filter(|v| v.is_number() || v.is_string())
                .map(|_| raw.to_owned());
            assert_eq!(RpcId::from_json(raw).map(|r| r.0), slow, "{raw}");
        }
    }

    #[test]
    fn escapes_forging_characters() {
        // Each of these, raw in a line, could end it, hide text or reorder it on screen.
        let cases = [
            ("a\nb", r"a\nb"),
            ("a\r\"b", r#"a\r\"b"#),
            ("a\u{7f}b", r"a\u007fb"),
            ("a\u{85}b", r"a\u0085b"),
            ("a\u{9f}b", r"a\u009fb"),
            ("a\u{2028}b\u{2029}", r"a\u2028b\u2029"),
            (
                "\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}",
                r"\u202a\u202b\u202c\u202d\u202e",
            ),
            (
                "\u{2066}\u{2067}\u{2068}\u{2069}",
                r"\u2066\u2067\u2068\u2069",
            ),
            ("\u{200e}\u{200f}\u{061c}", r"\u200e\u200f\u061c"),
            // Neighbours that are harmless stay raw.
            (
                "\u{a0}é\u{2027}\u{2030}\u{2065}\u{206a}\u{200d}",
                "\u{a0}é\u{2027}\u{2030}\u{2065}\u{206a}\u{200d}",
            ),
        ];
        for (raw, want) in cases {
            let b = body(&Event::Decision(decision(&format!("file:///{raw}"))));
            assert!(
                b.contains(&format!("\"uri\":\"file:///{want}\"")),
                "{raw:?} -> {b}"
            );
            let obj = format!("{{{b}");
            let Some(Event::Decision(d)) = Event::from_body("decision", obj.as_bytes()).unwrap()
            else {
                panic!()
            };
            assert_eq!(d.uri.as_str(), format!("file:///{raw}"));
        }
    }

    #[test]
    fn long_values_are_cut_with_their_hash() {
        let long = format!("file:///{}", "a".repeat(10_000));
        let u = AuditUri::new(&long);
        assert!(u.as_str().len() < MAX_URI_BYTES + 100);
        assert!(u.as_str().contains("10008 bytes, sha256:"));
        // Cut at a char boundary.
        let multi = "é".repeat(3000);
        assert!(AuditUri::new(&multi).as_str().starts_with('é'));
        let id = "9".repeat(300);
        assert!(
            RpcId::from_json(&id)
                .unwrap()
                .as_json()
                .starts_with("\"sha256:")
        );
    }

    #[test]
    fn rpc_id_accepts_only_numbers_and_strings() {
        for ok in ["1", "-3", "1.5e3", r#""abc""#, r#""\u202e""#, " 4 "] {
            assert!(RpcId::from_json(ok).is_some(), "{ok}");
        }
        for bad in ["null", "{}", "[1]", "true", "1 2", "", r#"{"secret":"x"}"#] {
            assert!(RpcId::from_json(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn redacts_secret_arguments() {
        let argv: Vec<std::ffi::OsString> = [
            "npx",
            "server",
            "--api-key",
            "sk-1",
            "--token=abc",
            "GITHUB_TOKEN=ghp",
            "--root",
            "/data",
            "--auth",
            "--verbose",
            "/path/with/token=x",
        ]
        .iter()
        .map(Into::into)
        .collect();
        assert_eq!(
            redact_command(&argv),
            [
                "npx",
                "server",
                "--api-key",
                "<redacted>",
                "--token=<redacted>",
                "GITHUB_TOKEN=<redacted>",
                "--root",
                "/data",
                "--auth",
                "--verbose",
                "/path/with/token=x",
            ]
        );
    }

    #[test]
    fn unknown_event_names_are_not_errors() {
        assert!(Event::from_body("future_thing", b"{}").unwrap().is_none());
        assert!(Event::from_body("decision", b"{}").is_err());
    }

    proptest::proptest! {
        /// Whatever a URI contains, its record is one line with no raw control, separator
        /// or bidi character, and the logged value decodes to exactly the URI.
        #[test]
        fn any_uri_stays_on_one_safe_line(uri in "\\PC*|[\\x00-\\x{a0}\\x{2000}-\\x{2070}\\x{feff}]{0,40}") {
            let b = body(&Event::Decision(decision(&uri)));
            proptest::prop_assert!(!b.contains('\n'));
            let raw_unsafe = b.chars().any(|c| c.is_control()
                || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}'
                    | '\u{2066}'..='\u{2069}'));
            proptest::prop_assert!(!raw_unsafe, "{}", b);
            let obj = format!("{{{b}");
            let Some(Event::Decision(d)) = Event::from_body("decision", obj.as_bytes()).unwrap()
            else {
                panic!()
            };
            proptest::prop_assert_eq!(d.uri, AuditUri::new(&uri));
        }
    }
}
