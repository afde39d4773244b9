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

/// Longest URI kept verbatim in a record, in bytes. A longer one is cut at a character
/// boundary and marked with its full length and SHA-256, so a hostile server cannot fill the
/// disk (and stop the session) through the audit log with a few huge URIs.
pub const MAX_URI_BYTES: usize = 4096;

/// Longest free-text field (method names, details) kept verbatim, in bytes.
pub const MAX_TEXT_BYTES: usize = 512;

/// One audit event. Each variant is one `event` name in the schema.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// `session_start`: the first record of a session (written by [`AuditLog::open`]).
    ///
    /// [`AuditLog::open`]: super::AuditLog::open
    SessionStart(SessionStart),
    /// `initialized`: the negotiated protocol revision and the peers' names, once known.
    Initialized(Initialized),
    /// `roots_update`: the host's roots arrived or changed and the effective roots moved.
    RootsUpdate(RootsUpdate),
    /// `server_start`: a server generation started: the first when the roots to confine it
    /// to were known, another each time the effective roots' grants changed.
    ServerStart(ServerStart),
    /// `decision`: one URI checked, with its provenance and what was done.
    Decision(Decision),
    /// `protocol_error`: a line or message that could not be relayed as is.
    ProtocolError(ProtocolError),
    /// `session_end`: the last record of a session (written by [`AuditLog::close`]).
    ///
    /// [`AuditLog::close`]: super::AuditLog::close
    SessionEnd(SessionEnd),
    /// `log_recovered`: written by the writer itself after it found a torn final line.
    LogRecovered(LogRecovered),
    /// `log_rewound`: written by the writer itself when the log it is writing lost records
    /// from its end (truncated, or replaced) while it was open.
    LogRewound(LogRewound),
    /// `decision_summary`: the allowed entries of one list page, counted instead of one
    /// `decision` each (`audit.allowed = "summary"`); the page's denials have their own records.
    DecisionSummary(DecisionSummary),
    /// `protocol_error_repeated`: the protocol errors of one kind that followed a logged one
    /// within an interval, counted (written by the log itself).
    ProtocolErrorRepeated(ProtocolErrorRepeated),
    /// `log_pruned`: written by the writer itself when retention removed old rotated files.
    LogPruned(LogPruned),
    /// `sink_dropped`: records a shipping sink (syslog) could not take, counted (written by
    /// the log itself, at most once per interval).
    SinkDropped(SinkDropped),
    /// `policy_reload`: a policy reload was asked for (SIGHUP): applied, or refused with why.
    PolicyReload(PolicyReload),
}

impl Event {
    /// The `event` name written in the record.
    pub fn name(&self) -> &'static str {
        match self {
            Event::SessionStart(_) => "session_start",
            Event::Initialized(_) => "initialized",
            Event::RootsUpdate(_) => "roots_update",
            Event::ServerStart(_) => "server_start",
            Event::Decision(_) => "decision",
            Event::ProtocolError(_) => "protocol_error",
            Event::SessionEnd(_) => "session_end",
            Event::LogRecovered(_) => "log_recovered",
            Event::LogRewound(_) => "log_rewound",
            Event::DecisionSummary(_) => "decision_summary",
            Event::ProtocolErrorRepeated(_) => "protocol_error_repeated",
            Event::LogPruned(_) => "log_pruned",
            Event::SinkDropped(_) => "sink_dropped",
            Event::PolicyReload(_) => "policy_reload",
        }
    }

    /// Serializes the event's part of a line: `"event":"<name>",<fields>}` (escaped, without
    /// the envelope's opening and without the newline).
    pub(crate) fn write_body(&self, out: &mut Vec<u8>) {
        let name = self.name();
        match self {
            Event::SessionStart(e) => write_named(name, e, out),
            Event::Initialized(e) => write_named(name, e, out),
            Event::RootsUpdate(e) => write_named(name, e, out),
            Event::ServerStart(e) => write_named(name, e, out),
            Event::Decision(e) => write_named(name, e, out),
            Event::ProtocolError(e) => write_named(name, e, out),
            Event::SessionEnd(e) => write_named(name, e, out),
            Event::LogRecovered(e) => write_named(name, e, out),
            Event::LogRewound(e) => write_named(name, e, out),
            Event::DecisionSummary(e) => write_named(name, e, out),
            Event::ProtocolErrorRepeated(e) => write_named(name, e, out),
            Event::LogPruned(e) => write_named(name, e, out),
            Event::SinkDropped(e) => write_named(name, e, out),
            Event::PolicyReload(e) => write_named(name, e, out),
        }
    }

    /// Parses the event from a record's body, `{"event":"<name>",...}`, given its name.
    /// `Ok(None)` for an event name this version does not know (a newer writer).
    pub(crate) fn from_body(name: &str, body: &[u8]) -> Result<Option<Event>, serde_json::Error> {
        Ok(Some(match name {
            "session_start" => Event::SessionStart(serde_json::from_slice(body)?),
            "initialized" => Event::Initialized(serde_json::from_slice(body)?),
            "roots_update" => Event::RootsUpdate(serde_json::from_slice(body)?),
            "server_start" => Event::ServerStart(serde_json::from_slice(body)?),
            "decision" => Event::Decision(serde_json::from_slice(body)?),
            "protocol_error" => Event::ProtocolError(serde_json::from_slice(body)?),
            "session_end" => Event::SessionEnd(serde_json::from_slice(body)?),
            "log_recovered" => Event::LogRecovered(serde_json::from_slice(body)?),
            "log_rewound" => Event::LogRewound(serde_json::from_slice(body)?),
            "decision_summary" => Event::DecisionSummary(serde_json::from_slice(body)?),
            "protocol_error_repeated" => {
                Event::ProtocolErrorRepeated(serde_json::from_slice(body)?)
            }
            "log_pruned" => Event::LogPruned(serde_json::from_slice(body)?),
            "sink_dropped" => Event::SinkDropped(serde_json::from_slice(body)?),
            "policy_reload" => Event::PolicyReload(serde_json::from_slice(body)?),
            _ => return Ok(None),
        }))
    }

    /// Whether the default fsync policy syncs before acknowledging this record.
    pub(crate) fn is_critical(&self) -> bool {
        match self {
            Event::Decision(d) => d.decision == Verdict::Deny,
            Event::SessionStart(_)
            | Event::ServerStart(_)
            | Event::SessionEnd(_)
            | Event::LogRecovered(_)
            | Event::LogRewound(_)
            | Event::LogPruned(_)
            | Event::PolicyReload(_) => true,
            _ => false,
        }
    }
}

/// Appends `"event":"<name>",<fields of value>}` (escaped, without the envelope's opening
/// and without the newline).
pub(crate) fn write_named<T: Serialize + ?Sized>(name: &str, value: &T, out: &mut Vec<u8>) {
    write_named_with(name, out, |out| {
        // Serializing these types to a Vec cannot fail: no maps with non-string keys, no
        // custom Serialize that errors.
        let r = serde_json::to_writer(&mut *out, value);
        debug_assert!(r.is_ok());
    });
}

/// [`write_named`] of a decision borrowed on the hot path, written by
/// [`DecisionRef::write_json`] rather than serde (the same bytes).
pub(crate) fn write_named_decision(d: &DecisionRef<'_>, out: &mut Vec<u8>) {
    write_named_with("decision", out, |out| d.write_json(out));
}

/// [`write_named`] with the object written by `object`.
fn write_named_with(name: &str, out: &mut Vec<u8>, object: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(b"\"event\":\"");
    out.extend_from_slice(name.as_bytes());
    out.push(b'"');
    let fields_at = out.len();
    object(out);
    // The struct came out as `{...}`: turn its `{` into the `,` after the event name, or drop
    // it if the struct has no fields (`{}`).
    if out.len() == fields_at + 2 {
        out.truncate(fields_at);
        out.push(b'}');
    } else {
        out[fields_at] = b',';
    }
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
    /// stdio: the principal the host's `clientInfo` claims (not authenticated); absent when
    /// the session's `session_start` named an authenticated principal.
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

/// Which way a message was going.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// From the host (MCP client) to the server.
    HostToServer,
    /// From the server to the host.
    ServerToHost,
}

/// A decision's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Inside the roots and allowed by the policy.
    Allow,
    /// Refused.
    Deny,
}

/// What rootfence did with the message or item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Passed on (possibly with the URI canonicalized).
    Forwarded,
    /// The item was removed from a list or result; the rest was passed on.
    Filtered,
    /// The message was rewritten (e.g. roots narrowed).
    Rewritten,
    /// rootfence answered with a JSON-RPC error; the other side never saw the request.
    AnsweredError,
    /// The message was dropped (e.g. an unsolicited notification).
    Dropped,
}

/// `decision` fields: one URI checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// Which way the message was going.
    pub direction: Direction,
    /// The JSON-RPC method (of the request, for a result), as sent.
    #[serde(serialize_with = "ser_text")]
    pub method: String,
    /// The JSON-RPC id, if the message had one.
    #[serde(default)]
    pub id: Option<RpcId>,
    /// The session-unique key of the host request this decision belongs to (the request or
    /// its result): 1 for the session's first host request, then one more per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<u64>,
    /// Who the session acts for: the principal's `subject` (`token:<hex>`, `anonymous`,
    /// `claimed:<clientInfo.name>`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_opt_text"
    )]
    pub principal: Option<String>,
    /// The tool called, on a decision about a `tools/call` request or its result
    /// (`params.name`, as the host sent it).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_opt_text"
    )]
    pub tool: Option<String>,
    /// Where in the message the URI was, e.g. `params.uri`, `result.contents[2].uri`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The URI as received.
    pub uri: AuditUri,
    /// Its canonical form, when it could be canonicalized.
    #[serde(default)]
    pub canonical: Option<AuditUri>,
    /// Allowed or denied.
    pub decision: Verdict,
    /// Stable snake_case reason code, e.g. `inside_root`, `outside_roots`, `denied_by_rule`.
    pub reason: String,
    /// The policy layer that decided (its file), if a rule decided.
    #[serde(default)]
    pub layer: Option<String>,
    /// The rule that decided (e.g. `deny[2] "**/.ssh/**"` or `file:line`).
    #[serde(default)]
    pub rule: Option<String>,
    /// The root the URI was checked against (the one containing it, for an allow).
    #[serde(default)]
    pub root: Option<AuditUri>,
    /// What was done.
    pub action: Action,
}

/// A `decision`'s fields, borrowed: what the relay records on its hot path without copying
/// each string first ([`Auditor::submit_decision`](super::Auditor::submit_decision)). It
/// serializes exactly as the [`Decision`] with the same values; the writer writes it with
/// `DecisionRef::write_json`, which the tests hold to that serialization.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct DecisionRef<'a> {
    /// Which way the message was going.
    pub direction: Direction,
    /// The JSON-RPC method (of the request, for a result), as sent.
    #[serde(serialize_with = "ser_text_ref")]
    pub method: &'a str,
    /// The JSON-RPC id, if the message had one.
    pub id: Option<&'a RpcId>,
    /// The session-unique key of the host request the decision belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<u64>,
    /// The principal's subject.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_opt_text_ref"
    )]
    pub principal: Option<&'a str>,
    /// The tool called, on a `tools/call` decision.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_opt_text_ref"
    )]
    pub tool: Option<&'a str>,
    /// Where in the message the URI was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<&'a str>,
    /// The URI as received.
    #[serde(serialize_with = "ser_uri_ref")]
    pub uri: &'a str,
    /// Its canonical form, when it could be canonicalized.
    #[serde(serialize_with = "ser_opt_uri_ref")]
    pub canonical: Option<&'a str>,
    /// Allowed or denied.
    pub decision: Verdict,
    /// Stable snake_case reason code.
    pub reason: &'a str,
    /// The policy layer that decided, if a rule decided.
    pub layer: Option<&'a str>,
    /// The rule that decided.
    pub rule: Option<&'a str>,
    /// The root the URI was checked against.
    #[serde(serialize_with = "ser_opt_uri_ref")]
    pub root: Option<&'a str>,
    /// What was done.
    pub action: Action,
}

impl DecisionRef<'_> {
    /// Appends this decision as a JSON object: byte for byte what its `Serialize` writes
    /// through serde_json (the tests hold it to that), without serde's per-field machinery
    /// or a parse of the id. A read is recorded by this on the relay's thread, between
    /// reading the host's request and forwarding it.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"direction\":\"");
        out.extend_from_slice(match self.direction {
            Direction::HostToServer => b"host_to_server",
            Direction::ServerToHost => b"server_to_host",
        });
        out.extend_from_slice(b"\",\"method\":");
        json_str(out, &cut(self.method, MAX_TEXT_BYTES));
        out.extend_from_slice(b",\"id\":");
        // An id's text is JSON already (a number or a string: `RpcId::from_json`), which
        // serde writes through as it is.
        out.extend_from_slice(self.id.map_or("null", |id| id.0.as_str()).as_bytes());
        if let Some(request) = self.request {
            out.extend_from_slice(b",\"request\":");
            out.extend_from_slice(request.to_string().as_bytes());
        }
        if let Some(principal) = self.principal {
            out.extend_from_slice(b",\"principal\":");
            json_str(out, &cut(principal, MAX_TEXT_BYTES));
        }
        if let Some(tool) = self.tool {
            out.extend_from_slice(b",\"tool\":");
            json_str(out, &cut(tool, MAX_TEXT_BYTES));
        }
        if let Some(field) = self.field {
            out.extend_from_slice(b",\"field\":");
            json_str(out, field);
        }
        out.extend_from_slice(b",\"uri\":");
        json_str(out, &cut(self.uri, MAX_URI_BYTES));
        out.extend_from_slice(b",\"canonical\":");
        json_opt(
            out,
            self.canonical.map(|u| cut(u, MAX_URI_BYTES)).as_deref(),
        );
        out.extend_from_slice(match self.decision {
            Verdict::Allow => b",\"decision\":\"allow\",\"reason\":",
            Verdict::Deny => b",\"decision\":\"deny\",\"reason\":",
        });
        json_str(out, self.reason);
        out.extend_from_slice(b",\"layer\":");
        json_opt(out, self.layer);
        out.extend_from_slice(b",\"rule\":");
        json_opt(out, self.rule);
        out.extend_from_slice(b",\"root\":");
        json_opt(out, self.root.map(|u| cut(u, MAX_URI_BYTES)).as_deref());
        out.extend_from_slice(b",\"action\":\"");
        out.extend_from_slice(match self.action {
            Action::Forwarded => b"forwarded".as_slice(),
            Action::Filtered => b"filtered",
            Action::Rewritten => b"rewritten",
            Action::AnsweredError => b"answered_error",
            Action::Dropped => b"dropped",
        });
        out.extend_from_slice(b"\"}");
    }
}

/// A JSON string as serde_json writes it: copied when nothing in it needs escaping (the
/// usual URI, rule or reason), else escaped by serde_json itself.
fn json_str(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        let r = serde_json::to_writer(&mut *out, s);
        debug_assert!(r.is_ok());
    }
}

fn json_opt(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => json_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

fn ser_text_ref<S: Serializer>(v: &&str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&cut(v, MAX_TEXT_BYTES))
}

fn ser_uri_ref<S: Serializer>(v: &&str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&cut(v, MAX_URI_BYTES))
}

fn ser_opt_uri_ref<S: Serializer>(v: &Option<&str>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(u) => s.serialize_str(&cut(u, MAX_URI_BYTES)),
        None => s.serialize_none(),
    }
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
    #[serde(default)]
    pub sha256: Option<String>,
    /// The JSON-RPC id, when one could be read.
    #[serde(default)]
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
    #[serde(default)]
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

/// A URI (or path) as it is logged: the text as received, cut at [`MAX_URI_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash, PartialOrd, Ord)]
pub struct AuditUri(String);

impl AuditUri {
    /// Wraps `s`; a string longer than [`MAX_URI_BYTES`] is cut at a character boundary
    /// and suffixed with `…[<len> bytes, sha256:<hex>]`.
    pub fn new(s: &str) -> Self {
        Self(cut(s, MAX_URI_BYTES).into_owned())
    }

    /// The logged text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for AuditUri {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<String> for AuditUri {
    fn from(s: String) -> Self {
        if s.len() <= MAX_URI_BYTES {
            Self(s)
        } else {
            Self::new(&s)
        }
    }
}

impl Serialize for AuditUri {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for AuditUri {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self)
    }
}

/// A JSON-RPC id, kept as its JSON text (a number or a string), so `1` and `"1"` stay
/// distinct in the log as they are on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RpcId(String);

/// Longest id kept verbatim; a longer one is logged as `"sha256:<hex>"`.
const MAX_ID_BYTES: usize = 256;

impl RpcId {
    /// From the id's raw JSON text. `None` unless it is one JSON number or string.
    pub fn from_json(raw: &str) -> Option<Self> {
        let raw = raw.trim_matches([' ', '\t', '\r', '\n']);
        // The common case, a small integer or a plain string, without a JSON parse.
        let digits = raw.strip_prefix('-').unwrap_or(raw);
        let plain_int = !digits.is_empty()
            && digits.len() <= 19
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'));
        let plain_str = raw.len() >= 2
            && raw.len() <= MAX_ID_BYTES
            && raw.starts_with('"')
            && raw.ends_with('"')
            && raw[1..raw.len() - 1]
                .bytes()
                .all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b < 0x7f);
        if plain_int || plain_str {
            return Some(Self(raw.to_owned()));
        }
        let v: serde_json::Value = serde_json::from_str(raw).ok()?;
        if !(v.is_number() || v.is_string()) {
            return None;
        }
        if raw.len() > MAX_ID_BYTES {
            return Some(Self(format!(
                "\"sha256:{}\"",
                super::chain::sha256_hex(raw.as_bytes())
            )));
        }
        Some(Self(raw.to_owned()))
    }

    /// A numeric id.
    pub fn number(n: i64) -> Self {
        Self(n.to_string())
    }

    /// The id's JSON text.
    pub fn as_json(&self) -> &str {
        &self.0
    }
}

impl Serialize for RpcId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Validated in `from_json`, so this parse cannot fail; fall back to a string anyway.
        match serde_json::from_str::<&serde_json::value::RawValue>(&self.0) {
            Ok(raw) => raw.serialize(s),
            Err(_) => s.serialize_str(&self.0),
        }
    }
}

impl<'de> Deserialize<'de> for RpcId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        Ok(Self(raw.get().to_owned()))
    }
}

fn ser_text<S: Serializer>(v: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&cut(v, MAX_TEXT_BYTES))
}

fn ser_opt_text<S: Serializer>(v: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(t) => s.serialize_str(&cut(t, MAX_TEXT_BYTES)),
        None => s.serialize_none(),
    }
}

fn ser_opt_text_ref<S: Serializer>(v: &Option<&str>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(t) => s.serialize_str(&cut(t, MAX_TEXT_BYTES)),
        None => s.serialize_none(),
    }
}

/// `s`, or its first `max` bytes (at a char boundary) plus a marker with the full length
/// and hash.
fn cut(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!(
        "{}…[{} bytes, sha256:{}]",
        &s[..end],
        s.len(),
        super::chain::sha256_hex(s.as_bytes())
    ))
}

/// Argument names whose value is a secret; matched case-insensitively as a substring of the
/// option or variable name.
const SECRET_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "api-key",
    "api_key",
    "apikey",
    "credential",
    "auth",
    "private-key",
];

/// Replaces the values of secret-looking arguments: `--token X`, `--token=X`, `API_KEY=X`.
fn redact_command(argv: &[std::ffi::OsString]) -> Vec<String> {
    const R: &str = "<redacted>";
    let is_secret = |name: &str| {
        let n = name.to_ascii_lowercase();
        SECRET_WORDS.iter().any(|w| n.contains(w))
    };
    let mut out = Vec::with_capacity(argv.len());
    let mut redact_next = false;
    for a in argv {
        let a = a.to_string_lossy();
        if std::mem::take(&mut redact_next) && !a.starts_with('-') {
            out.push(R.to_owned());
            continue;
        }
        if let Some((name, _)) = a.split_once('=')
            && is_secret(name)
            && !name.contains('/')
        {
            out.push(format!("{name}={R}"));
        } else {
            if a.starts_with('-') && is_secret(&a) {
                redact_next = true;
            }
            out.push(a.into_owned());
        }
    }
    out
}

/// Escapes, in place from `start`, the characters serde_json leaves raw but that must not
/// appear raw in a log line: DEL, C1 controls, U+2028/U+2029, bidi controls and U+FEFF
/// become `\uXXXX`. They can only occur inside JSON strings (the structure is ASCII), where the
/// escape means the same character, so the JSON value is unchanged.
pub(crate) fn escape_line(buf: &mut Vec<u8>, start: usize) {
    // Fast path: every character to escape is DEL or outside ASCII, and most lines are
    // plain ASCII (checked a word at a time).
    let tail = &buf[start..];
    if tail.is_ascii() && memchr::memchr(0x7f, tail).is_none() {
        return;
    }
    let tail = buf.split_off(start);
    let mut i = 0;
    while i < tail.len() {
        let b = tail[i];
        let cp = match b {
            0x7f => Some((0x7f, 1)),
            0xc2 if matches!(tail.get(i + 1), Some(0x80..=0x9f)) => {
                Some((u32::from(tail[i + 1]), 2))
            }
            0xd8 if tail.get(i + 1) == Some(&0x9c) => Some((0x061c, 2)),
            0xe2 if tail.get(i + 1) == Some(&0x80)
                && matches!(tail.get(i + 2), Some(0x8e | 0x8f | 0xa8..=0xae)) =>
            {
                Some((0x2000 | u32::from(tail[i + 2] & 0x3f), 3))
            }
            0xe2 if tail.get(i + 1) == Some(&0x81)
                && matches!(tail.get(i + 2), Some(0xa6..=0xa9)) =>
            {
                Some((0x2040 | u32::from(tail[i + 2] & 0x3f), 3))
            }
            // U+FEFF: invisible, so `a\u{feff}b` would pass for `ab`.
            0xef if tail.get(i + 1) == Some(&0xbb) && tail.get(i + 2) == Some(&0xbf) => {
                Some((0xfeff, 3))
            }
            _ => None,
        };
        match cp {
            Some((cp, n)) => {
                use std::io::Write;
                let _ = write!(buf, "\\u{cp:04x}");
                i += n;
            }
            None => {
                buf.push(b);
                i += 1;
            }
        }
    }
}

/// Escapes, in JSON text from `start`, every character [`is_unsafe_display_char`] names
/// from U+007F up as `\uXXXX` (a surrogate pair above U+FFFF), so JSON printed for a person
/// or a pipe carries no raw C1 control, separator or bidi control, whatever a log holds.
/// Below U+007F a JSON writer has already escaped everything inside strings and what
/// remains is structure, which is left alone. The JSON value is unchanged.
pub(crate) fn escape_json_display(buf: &mut Vec<u8>, start: usize) {
    if buf[start..].iter().all(|&b| b < 0x7f) {
        return;
    }
    let tail = buf.split_off(start);
    let text = match String::from_utf8(tail) {
        Ok(t) => t,
        Err(e) => {
            // Not UTF-8, so not JSON this function can reason about: left as it was.
            buf.extend_from_slice(e.as_bytes());
            return;
        }
    };
    for c in text.chars() {
        if u32::from(c) >= 0x7f && is_unsafe_display_char(c) {
            use std::io::Write;
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(buf, "\\u{u:04x}");
            }
        } else {
            let mut b = [0u8; 4];
            buf.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
        }
    }
}

/// Whether a character must be escaped when shown to a person: every control character,
/// the line separators and the bidi controls (and the backslash, so an escape in the text
/// cannot pass for one of ours).
pub(crate) fn is_unsafe_display_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\\' | '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
        )
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
            let mut serde = Vec::new();
            write_named("decision", &borrowed, &mut serde);
            let mut hand = Vec::new();
            write_named_decision(&borrowed, &mut hand);
            let owned = body(&Event::Decision(owned.clone()));
            assert_eq!(String::from_utf8(serde).unwrap(), owned);
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
        /// borrowed and owned.
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
            let mut serde = Vec::new();
            write_named("decision", &borrowed, &mut serde);
            proptest::prop_assert_eq!(&hand, &serde);
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
