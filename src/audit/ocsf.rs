//! The record mapped to OCSF (Open Cybersecurity Schema Framework, 1.3) field names, for
//! SIEMs that ingest OCSF: `audit show --format ocsf` and the syslog MSG with
//! `format = "ocsf"`. The mapping is documented in docs/audit-schema.md, "OCSF".
//!
//! - `decision` → API Activity (class 6003): the MCP request is the API call
//!   (`api.operation` the method, `api.request.uid` the JSON-RPC id), the URI the resource,
//!   the verdict `action_id`/`disposition_id` (1 allowed, 2 denied/blocked);
//! - `session_start`, `session_end` → Application Lifecycle (class 6002), Start / Stop;
//! - everything else → Base Event (class 0), activity "Other".
//!
//! Every record keeps its envelope in `metadata` (`sequence` the seq, `correlation_uid` the
//! session, `uid` `session:seq`), and the fields OCSF has no place for under `unmapped`,
//! so nothing is lost.
//!
//! The attributes the schema requires for these classes are always present: `actor` and
//! `src_endpoint` on a decision (the side that sent the message: the host's `clientInfo`
//! name, or the server's `serverInfo` name, as that peer *claimed* it in `initialize`: not
//! authenticated, and said so in `unmapped.actor_claimed`), `app` on start and stop
//! records. [`Mapper`] remembers each session's claimed names from its `initialized`
//! record; without them (a session whose `initialized` it did not see), the sides are
//! named `mcp host` and `mcp server`.
//!
//! The principal (issue 29): a decision's `principal` is mapped to `actor.user.uid` only
//! when it was authenticated (`token:<hex>`, a bearer token of `rootfence serve`); a
//! `claimed:` principal (a stdio host's `clientInfo`) or `anonymous` is not an identity and
//! stays in `unmapped.principal`, with `unmapped.actor_claimed` saying so. The client
//! address a served session's `session_start` names becomes `src_endpoint.ip`/`port` of the
//! host's decisions in that session.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::mcp::methods as m;

/// Maps records in log order, remembering per session the peers' claimed names (from
/// `initialized`) for the decisions that follow.
#[derive(Debug, Default)]
pub struct Mapper {
    /// session → what its earlier records said about the peers.
    peers: HashMap<String, Peers>,
}

/// What a session's `session_start` and `initialized` records said about its peers.
#[derive(Debug, Default, Clone)]
struct Peers {
    /// The host's `clientInfo.name`, as claimed.
    host: Option<String>,
    /// The server's `serverInfo.name`, as claimed.
    server: Option<String>,
    /// The address of the connection that opened a served session (`ip:port`).
    client_address: Option<String>,
}

impl Mapper {
    /// Maps one record; an `initialized` or `session_start` record is remembered for its
    /// session.
    pub fn map(&mut self, rec: &Map<String, Value>) -> Value {
        self.remember(rec);
        let session = rec.get("session").and_then(Value::as_str).unwrap_or("");
        let peers = self.peers.get(session).cloned().unwrap_or_default();
        map_with(rec, &peers)
    }

    /// Remembers what an `initialized` or `session_start` record says about its session's
    /// peers, without mapping it (a reader's filter left the record out, but the decisions
    /// it shows still need the session's facts).
    pub fn remember(&mut self, rec: &Map<String, Value>) {
        let s = |k: &str| rec.get(k).and_then(Value::as_str);
        let session = s("session").unwrap_or("");
        let name = |k: &str| {
            rec.get(k)
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        // Bounded: one entry per session seen (a reader's input, a writer's one).
        let room = self.peers.len() < 65_536 || self.peers.contains_key(session);
        // The client's address: on `session_start`, or on `initialized` for a `serve`
        // session on a pre-started server (its principal came when a client took it).
        let address = rec
            .get("principal")
            .and_then(|p| p.get("client_address"))
            .and_then(Value::as_str);
        if let Some(event @ ("initialized" | "session_start")) = s("event")
            && room
        {
            let p = self.peers.entry(session.to_owned()).or_default();
            if event == "initialized" {
                p.host = name("host");
                p.server = name("server");
            }
            if let Some(a) = address {
                p.client_address = Some(a.to_owned());
            }
        }
    }
}

/// The OCSF schema version the mapping follows.
pub const OCSF_VERSION: &str = "1.3.0";

/// The product object for rootfence (OCSF `product`: `name` required).
fn rootfence_product() -> Value {
    json!({"name": "rootfence", "vendor_name": "rootfence", "version": env!("CARGO_PKG_VERSION")})
}

/// An OCSF enumeration's value: its uid and its name.
type Named = (u32, &'static str);

/// Maps one record, with what the session's earlier records said about its peers.
fn map_with(rec: &Map<String, Value>, peers: &Peers) -> Value {
    let (host, server) = (peers.host.as_deref(), peers.server.as_deref());
    let s = |k: &str| rec.get(k).and_then(Value::as_str);
    let event = s("event").unwrap_or("");
    let seq = rec.get("seq").cloned().unwrap_or(Value::Null);
    let session = s("session").unwrap_or("");
    let time = s("ts")
        .and_then(super::time::parse_rfc3339)
        .map_or(Value::Null, |us| json!(us / 1000));
    let mut used: Vec<&str> = vec!["v", "seq", "ts", "session", "prev", "event"];
    let mut out = Map::new();
    let (class, category, activity): (Named, Named, Named);
    const APPLICATION: Named = (6, "Application Activity");
    let mut severity_id = 1; // Informational
    let mut claimed_note = false;
    match event {
        "decision" => {
            (class, category) = ((6003, "API Activity"), APPLICATION);
            let method = s("method").unwrap_or("");
            activity = match method {
                m::RESOURCES_READ
                | m::RESOURCES_LIST
                | m::RESOURCES_TEMPLATES_LIST
                | m::RESOURCES_SUBSCRIBE
                | m::PROMPTS_GET
                | m::ROOTS_LIST => (2, "Read"),
                _ => (99, "Other"),
            };
            let allowed = s("decision") == Some("allow");
            if !allowed {
                severity_id = 3; // Medium
            }
            // `<key>_id` 1 and its word when allowed, 2 and the other word when denied.
            let outcome = usize::from(!allowed);
            for (key, words) in [
                ("action", ["Allowed", "Denied"]),
                ("disposition", ["Allowed", "Blocked"]),
                ("status", ["Success", "Failure"]),
            ] {
                out.insert(format!("{key}_id"), json!(outcome + 1));
                out.insert(key.into(), json!(words[outcome]));
            }
            if let Some(r) = s("reason") {
                out.insert("status_detail".into(), json!(r));
            }
            let mut api = json!({"operation": method});
            if let Some(id) = rec.get("id") {
                api["request"] = json!({"uid": id.to_string()});
            }
            api["service"] = json!({"name": "mcp"});
            out.insert("api".into(), api);
            // Who sent the message: the host for a request it made, the server for a
            // result it returned. Their names are what they claimed in `initialize`.
            let from_host = s("direction") != Some("server_to_host");
            let (side, other, claimed) = if from_host {
                ("mcp host", "mcp server", host)
            } else {
                ("mcp server", "mcp host", server)
            };
            let mut actor = json!({"app_name": claimed.unwrap_or(side)});
            // Only an authenticated principal is a user; a claimed name is not an identity.
            if from_host && let Some(p) = s("principal").filter(|p| p.starts_with("token:")) {
                actor["user"] = json!({"uid": p, "type_id": 1, "type": "User"});
                used.push("principal");
            }
            actor["session"] = json!({"uid": session, "issuer": "rootfence"});
            out.insert("actor".into(), actor);
            let mut src = json!({"name": side, "svc_name": "mcp"});
            if from_host
                && let Some((ip, port)) = peers
                    .client_address
                    .as_deref()
                    .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
                    .map(|a| (a.ip(), a.port()))
            {
                src["ip"] = json!(ip.to_string());
                src["port"] = json!(port);
            }
            out.insert("src_endpoint".into(), src);
            out.insert(
                "dst_endpoint".into(),
                json!({"name": other, "svc_name": "mcp"}),
            );
            claimed_note =
                claimed.is_some() || s("principal").is_some_and(|p| p.starts_with("claimed:"));
            if let Some(uri) = s("uri") {
                let uid = s("canonical").unwrap_or(uri);
                out.insert(
                    "resources".into(),
                    json!([{"uid": uid, "name": uri, "type": "uri"}]),
                );
            }
            if let Some(rule) = s("rule") {
                let mut policy = json!({"name": rule});
                if let Some(l) = s("layer") {
                    policy["uid"] = json!(l);
                }
                out.insert("policy".into(), policy);
            }
            used.extend([
                "method",
                "decision",
                "reason",
                "id",
                "uri",
                "canonical",
                "rule",
                "layer",
            ]);
        }
        "session_start" | "session_end" => {
            (class, category) = ((6002, "Application Lifecycle"), APPLICATION);
            activity = if event == "session_start" {
                (3, "Start")
            } else {
                (4, "Stop")
            };
            // The application that started or stopped: this rootfence session.
            let mut app = rootfence_product();
            app["uid"] = json!(session);
            out.insert("app".into(), app);
        }
        _ => {
            (class, category, activity) = ((0, "Base Event"), (0, "Uncategorized"), (99, "Other"));
            if matches!(event, "log_rewound" | "log_recovered") {
                severity_id = 4; // High: the log was damaged or cut
            }
        }
    }
    if let Value::Object(head) = json!({
        "class_uid": class.0,
        "class_name": class.1,
        "category_uid": category.0,
        "category_name": category.1,
        "activity_id": activity.0,
        "activity_name": activity.1,
        "type_uid": class.0 * 100 + activity.0,
        "severity_id": severity_id,
        "time": time,
        "message": event,
        "metadata": {
            "version": OCSF_VERSION,
            "product": rootfence_product(),
            "log_name": "rootfence audit",
            "event_code": event,
            "uid": format!("{session}:{seq}"),
            "sequence": seq,
            "correlation_uid": session,
        },
    }) {
        out.extend(head);
    }
    let mut unmapped: Map<String, Value> = rec
        .iter()
        .filter(|(k, _)| !used.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if claimed_note {
        unmapped.insert(
            "actor_claimed".into(),
            json!(
                "actor.app_name (and a claimed: principal) is the name the peer claimed in \
                 initialize (clientInfo or serverInfo), not authenticated"
            ),
        );
    }
    if !unmapped.is_empty() {
        out.insert("unmapped".into(), Value::Object(unmapped));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(s: &str) -> Map<String, Value> {
        serde_json::from_str(s).unwrap()
    }

    /// One record mapped without the peers' claimed names.
    fn map(rec: &Map<String, Value>) -> Value {
        map_with(rec, &Peers::default())
    }

    #[test]
    fn a_denial_maps_to_api_activity_blocked() {
        let r = rec(
            r#"{"v":1,"seq":5,"ts":"2026-01-02T03:04:05.123456Z","session":"ab","prev":"00","event":"decision","direction":"host_to_server","method":"resources/read","id":3,"uri":"file:///etc/passwd","canonical":"file:///etc/passwd","decision":"deny","reason":"outside_roots","layer":null,"rule":null,"root":null,"action":"answered_error"}"#,
        );
        let o = map(&r);
        assert_eq!(o["class_uid"], 6003);
        assert_eq!(o["type_uid"], 600302);
        assert_eq!(o["action_id"], 2);
        assert_eq!(o["disposition"], "Blocked");
        assert_eq!(o["status_detail"], "outside_roots");
        assert_eq!(o["api"]["operation"], m::RESOURCES_READ);
        assert_eq!(o["api"]["request"]["uid"], "3");
        assert_eq!(o["resources"][0]["uid"], "file:///etc/passwd");
        assert_eq!(o["time"], 1_767_323_045_123_i64);
        assert_eq!(o["metadata"]["sequence"], 5);
        assert_eq!(o["metadata"]["uid"], "ab:5");
        assert_eq!(o["unmapped"]["direction"], "host_to_server");
        assert_eq!(o["unmapped"]["action"], "answered_error");
        assert!(o["unmapped"].get("prev").is_none());
    }

    #[test]
    fn lifecycle_and_other_events() {
        let o = map(&rec(
            r#"{"seq":1,"session":"a","event":"session_start","pid":3}"#,
        ));
        assert_eq!(
            (o["class_uid"].clone(), o["activity_id"].clone()),
            (json!(6002), json!(3))
        );
        assert_eq!(o["unmapped"]["pid"], 3);
        let o = map(&rec(r#"{"seq":9,"session":"a","event":"log_rewound"}"#));
        assert_eq!(
            (o["class_uid"].clone(), o["severity_id"].clone()),
            (json!(0), json!(4))
        );
    }
}
