//! Server generations: a session's server process can be replaced mid-session (when the
//! grants it must run under change, see `enforce::follow`) without the host noticing.
//!
//! A new generation is started while the old one still runs. From the moment it is asked for
//! (see [`super::Session::launch`]), host messages go to the new generation's queue, held
//! behind a gate. The relay then brings it up to where the host stands, on a priority lane
//! ahead of the held messages:
//!
//! - up to 2025-11-25: the host's own `initialize` (rootfence's id; the answer is compared
//!   with the first generation's and consumed), `notifications/initialized`, the host's last
//!   `logging/setLevel`, and a `resources/subscribe` for every live subscription;
//! - 2026-07-28: nothing to replay (stateless), except the host's `subscriptions/listen`
//!   requests in flight, which are sent again under the host's own ids and move to the new
//!   generation.
//!
//! Then the gate opens. Older generations finish the requests they hold for at most a grace
//! period; what is still unanswered then is answered with an error asking the host to send it
//! again, and they are stopped (stdin closed, SIGTERM, SIGKILL). Requests the host sent to an
//! old generation keep their answers and cancellations going there; requests an old generation
//! sent to the host keep theirs too (later generations' request ids are renamed on the way to
//! the host, see `session.rs`).
//!
//! If a new generation cannot start or be brought up, the session ends (fail closed): every
//! host request waiting anywhere is answered with an error naming the cause.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::session::{Gen, Session};
use crate::jsonrpc::error::{SERVER_GONE, error_response};
use crate::mcp::methods as m;

/// A prepared server process for one generation.
pub struct Launch {
    /// The command to spawn (the relay adds stdio, a process group and the parent-death
    /// signal).
    pub command: std::process::Command,
    /// Runs on a blocking thread right after the spawn, before the generation gets any
    /// message (e.g. reads the sandbox's enforcement report). An error stops the generation.
    pub started: Option<Box<dyn FnOnce() -> Result<(), String> + Send>>,
    /// Kept until the generation's process has exited (e.g. the sandbox session that owns
    /// the private temp dir).
    pub keep: Option<Box<dyn std::any::Any + Send>>,
}

impl Launch {
    /// A launch of a plain command.
    pub fn command(command: std::process::Command) -> Launch {
        Launch {
            command,
            started: None,
            keep: None,
        }
    }
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

/// A generation that is up.
#[derive(Debug, Clone, Default)]
pub struct Launched {
    /// How its `initialize` answer differs from the first generation's, in words (empty when
    /// it does not, or nothing was replayed).
    pub differences: Vec<String>,
    /// Subscriptions the new generation refused, by URI.
    pub lost_subscriptions: Vec<String>,
}

/// Timing of generation changes.
#[derive(Debug, Clone, Copy)]
pub struct GenTiming {
    /// How long a new generation may take to answer the replayed `initialize` (and each
    /// renewed subscription).
    pub start_timeout: Duration,
    /// How long an old generation may keep answering what it holds.
    pub grace: Duration,
}

/// Brings a new generation (2 or later) up to where the host stands, then opens its gate.
pub(crate) async fn bring_up(
    session: Arc<Session>,
    generation: Gen,
    timing: GenTiming,
) -> Result<Launched, String> {
    let handshake = session.handshake();
    let mut launched = Launched::default();
    if let Some(params) = handshake.initialize {
        let answer = ask(&session, generation, m::INITIALIZE, Some(params), timing).await?;
        match (answer.get("result"), answer.get("error")) {
            (Some(result), _) => {
                if let Some(first) = &handshake.first_result {
                    launched.differences = differences(first, result);
                }
            }
            (None, Some(error)) => {
                return Err(format!("the new server refused `initialize`: {error}"));
            }
            _ => return Err("the new server's `initialize` answer is malformed".into()),
        }
        if handshake.initialized {
            session.notify_server(generation, m::INITIALIZED, None);
        }
        if let Some(level) = handshake.log_level {
            // A server that cannot set the level still serves; it just logs differently.
            if let Err(e) = ask(
                &session,
                generation,
                m::LOGGING_SET_LEVEL,
                Some(level),
                timing,
            )
            .await
            {
                tracing::warn!("generation {generation}: could not renew the log level: {e}");
            }
        }
        let asks: Vec<_> = handshake
            .subscriptions
            .into_iter()
            .map(|(uri, params)| {
                let rx = session.request_server(generation, m::RESOURCES_SUBSCRIBE, Some(params));
                (uri, rx)
            })
            .collect();
        for (uri, rx) in asks {
            let ok = matches!(
                tokio::time::timeout(timing.start_timeout, rx).await,
                Ok(Ok(v)) if v.get("result").is_some()
            );
            if !ok {
                tracing::warn!(
                    "generation {generation}: the subscription to {uri} was not renewed"
                );
                launched.lost_subscriptions.push(uri);
            }
        }
    }
    for line in session.move_listens(generation) {
        session.send_prio_server(generation, line);
    }
    session.open_gate(generation);
    Ok(launched)
}

/// Sends one request of rootfence's own to a generation and waits for its answer.
async fn ask(
    session: &Session,
    generation: Gen,
    method: &str,
    params: Option<Value>,
    timing: GenTiming,
) -> Result<Value, String> {
    let rx = session.request_server(generation, method, params);
    match tokio::time::timeout(timing.start_timeout, rx).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(_)) => Err(format!(
            "the new server stopped before answering `{method}`"
        )),
        Err(_) => Err(format!(
            "the new server did not answer `{method}` within {:?}",
            timing.start_timeout
        )),
    }
}

/// Tells the host what may have changed with a new generation: the list notifications its
/// capabilities promise (a restarted server does not know its lists changed under the host).
pub(crate) fn notify_host_lists(session: &Arc<Session>, capabilities: Option<&Value>) {
    let Some(caps) = capabilities else {
        return;
    };
    for (key, method) in [
        ("tools", m::TOOLS_LIST_CHANGED),
        ("resources", m::RESOURCES_LIST_CHANGED),
        ("prompts", m::PROMPTS_LIST_CHANGED),
    ] {
        if caps.pointer(&format!("/{key}/listChanged")) == Some(&Value::Bool(true)) {
            let line = serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": method}))
                .expect("a JSON value always serializes");
            session.send_detached(line.into());
        }
    }
}

/// Lets an old generation finish what it holds, for at most `grace`; answers the rest with an
/// error. The caller then stops it.
pub(crate) async fn retire(session: Arc<Session>, generation: Gen, grace: Duration) {
    let deadline = tokio::time::Instant::now() + grace;
    while session.pending_count(generation) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    restart_pending(&session, generation);
}

/// Answers the host requests still waiting for `generation` with an error asking the host to
/// send them again.
pub(crate) fn restart_pending(session: &Arc<Session>, generation: Gen) {
    for p in session.take_pending_of(generation) {
        let msg = format!(
            "rootfence: the server was restarted under new roots before answering `{}`; send \
             the request again",
            p.method
        );
        let data = json!({"method": &*p.method, "restarted": true});
        let line = error_response(Some(&p.id), SERVER_GONE, &msg, Some(data));
        session.send_detached(line.into());
    }
}

/// What differs between two `initialize` results in ways a host notices.
pub fn differences(first: &Value, next: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let version = |v: &Value| v.get("protocolVersion").cloned().unwrap_or(Value::Null);
    if version(first) != version(next) {
        out.push(format!(
            "protocolVersion: {} -> {}",
            version(first),
            version(next)
        ));
    }
    let caps = |v: &Value| v.get("capabilities").cloned().unwrap_or(json!({}));
    let (a, b) = (caps(first), caps(next));
    let keys: std::collections::BTreeSet<&String> = a
        .as_object()
        .into_iter()
        .flat_map(|o| o.keys())
        .chain(b.as_object().into_iter().flat_map(|o| o.keys()))
        .collect();
    for key in keys {
        let (x, y) = (a.get(key), b.get(key));
        if x != y {
            let show = |v: Option<&Value>| v.map_or("absent".to_owned(), Value::to_string);
            out.push(format!("capabilities.{key}: {} -> {}", show(x), show(y)));
        }
    }
    let name = |v: &Value| v.pointer("/serverInfo/name").cloned();
    if name(first) != name(next) {
        out.push(format!(
            "serverInfo.name: {} -> {}",
            name(first).unwrap_or(Value::Null),
            name(next).unwrap_or(Value::Null)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_differences_name_what_changed() {
        let a = json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}, "resources": {"subscribe": true}}, "serverInfo": {"name": "s", "version": "1"}});
        assert!(differences(&a, &a).is_empty());
        let b = json!({"protocolVersion": "2025-03-26", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "2"}});
        assert_eq!(
            differences(&a, &b),
            [
                "protocolVersion: \"2025-06-18\" -> \"2025-03-26\"",
                "capabilities.resources: {\"subscribe\":true} -> absent"
            ]
        );
    }
}
