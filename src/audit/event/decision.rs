//! The `decision` record: one URI checked, as an owned [`Decision`] (what readers parse) and
//! as a borrowed [`DecisionRef`] that the relay records on its hot path without copying each
//! string, written by hand to exactly the bytes serde writes for the same values.

use super::*;

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
    pub canonical: Option<AuditUri>,
    /// Allowed or denied.
    pub decision: Verdict,
    /// Stable snake_case reason code, e.g. `inside_root`, `outside_roots`, `denied_by_rule`.
    pub reason: String,
    /// The policy layer that decided (its file), if a rule decided.
    pub layer: Option<String>,
    /// The rule that decided (e.g. `deny[2] "**/.ssh/**"` or `file:line`).
    pub rule: Option<String>,
    /// The root the URI was checked against (the one containing it, for an allow).
    pub root: Option<AuditUri>,
    /// What was done.
    pub action: Action,
}

/// A `decision`'s fields, borrowed: what the relay records on its hot path without copying
/// each string first ([`Auditor::submit_decision`](crate::audit::Auditor::submit_decision)).
/// `DecisionRef::write_json` writes it as exactly the bytes serde writes for the
/// [`Decision`] with the same values (the tests hold it to that).
#[derive(Debug, Clone, Copy)]
pub struct DecisionRef<'a> {
    /// Which way the message was going.
    pub direction: Direction,
    /// The JSON-RPC method (of the request, for a result), as sent.
    pub method: &'a str,
    /// The JSON-RPC id, if the message had one.
    pub id: Option<&'a RpcId>,
    /// The session-unique key of the host request the decision belongs to.
    pub request: Option<u64>,
    /// The principal's subject.
    pub principal: Option<&'a str>,
    /// The tool called, on a `tools/call` decision.
    pub tool: Option<&'a str>,
    /// Where in the message the URI was.
    pub field: Option<&'a str>,
    /// The URI as received.
    pub uri: &'a str,
    /// Its canonical form, when it could be canonicalized.
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
    pub root: Option<&'a str>,
    /// What was done.
    pub action: Action,
}

impl DecisionRef<'_> {
    /// Appends this decision as a JSON object: byte for byte what serde_json writes for the
    /// owned [`Decision`] (the tests hold it to that), without serde's per-field machinery
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
            // Written in place: a `to_string` would allocate on every decision.
            let _ = std::io::Write::write_fmt(out, format_args!("{request}"));
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
pub(super) fn json_str(out: &mut Vec<u8>, s: &str) {
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

pub(super) fn json_opt(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => json_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}
