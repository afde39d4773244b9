//! What a later server generation must be told again to stand where the last one stood:
//! the host's handshake, log level, subscriptions and listens as forwarded, and what the
//! peers said about themselves.

use bytes::Bytes;
use serde_json::Value;

use super::*;
use crate::jsonrpc::Id;

impl Session {
    /// Records the host's `initialize` request.
    pub(crate) fn record_initialize(&self, msg: &Value) {
        let params = &msg["params"];
        let mut st = self.state();
        st.peers.requested_version = params["protocolVersion"].as_str().map(Revision::parse);
        st.peers.client_info = params.get("clientInfo").cloned();
        st.peers.client_capabilities = params.get("capabilities").cloned();
    }

    /// Records a host message forwarded to the server that a later generation must be told
    /// again: the handshake, the log level, subscriptions.
    pub(crate) fn record_forwarded(&self, method: &str, id: Option<&Id>, line: &Bytes) {
        use crate::mcp::methods as m;
        let params = || -> Option<Value> {
            let v: Value = serde_json::from_slice(line).ok()?;
            v.get("params").cloned()
        };
        let mut st = self.state();
        match method {
            m::INITIALIZE => st.handshake.initialize = params(),
            m::INITIALIZED => st.handshake.initialized = true,
            m::LOGGING_SET_LEVEL => st.handshake.log_level = params(),
            m::RESOURCES_SUBSCRIBE => {
                if let (Some(id), Some(p)) = (id, params())
                    && let Some(uri) = p.get("uri").and_then(Value::as_str)
                {
                    let uri = uri.to_owned();
                    st.subscribing.insert(id.key().clone(), (uri, p));
                }
            }
            m::RESOURCES_UNSUBSCRIBE => {
                if let Some(uri) = params().and_then(|p| p.get("uri")?.as_str().map(str::to_owned))
                {
                    st.handshake.subscriptions.remove(&uri);
                }
            }
            m::SUBSCRIPTIONS_LISTEN => {
                if let Some(id) = id {
                    st.handshake.listens.push((id.clone(), line.clone()));
                }
            }
            _ => {}
        }
    }

    /// Records the outcome of a host request the server answered, where a later generation
    /// must know it: a subscription that took, a listen that ended.
    pub(crate) fn record_answered(&self, method: &str, id: &Id, ok: bool) {
        use crate::mcp::methods as m;
        let mut st = self.state();
        match method {
            m::RESOURCES_SUBSCRIBE => {
                if let Some((uri, params)) = st.subscribing.remove(id.key())
                    && ok
                {
                    st.handshake.subscriptions.insert(uri, params);
                }
            }
            m::SUBSCRIPTIONS_LISTEN => st.handshake.listens.retain(|(i, _)| i != id),
            _ => {}
        }
    }

    /// Records the server's answer to `initialize` or `server/discover`.
    pub(crate) fn record_server_info(&self, msg: &Value, generation: Gen) {
        let result = &msg["result"];
        let mut st = self.state();
        if let Some(v) = result["protocolVersion"].as_str() {
            st.peers.version = Some(Revision::parse(v));
        }
        if let Some(info) = result.get("serverInfo") {
            st.peers.server_info = Some(info.clone());
        }
        if let Some(caps) = result.get("capabilities") {
            st.peers.server_capabilities = Some(caps.clone());
        }
        if generation == 1 && st.handshake.first_result.is_none() && result.is_object() {
            st.handshake.first_result = Some(result.clone());
        }
    }

    /// Records the `_meta` protocol version and client capabilities of a 2026-07-28 request
    /// from the host. (Only the host speaks for the host: the same keys in a server's request
    /// are never recorded.)
    pub(crate) fn record_meta(&self, version: &str, caps: Option<&serde_json::value::RawValue>) {
        let mut st = self.state();
        if st.peers.version.as_ref().map(Revision::as_str) != Some(version) {
            st.peers.version = Some(Revision::parse(version));
        }
        if let Some(caps) = caps.and_then(|raw| serde_json::from_str(raw.get()).ok()) {
            st.peers.client_capabilities = Some(caps);
        }
    }

    /// Moves the host's `subscriptions/listen` requests in flight to a new generation (their
    /// lines are replayed to it; the old generation's answers to them are then unmatched).
    pub(crate) fn move_listens(&self, generation: Gen) -> Vec<Bytes> {
        let mut st = self.state();
        let listens = st.handshake.listens.clone();
        let mut lines = Vec::new();
        for (id, line) in listens {
            if let Some(p) = st.host_pending.get_mut(id.key()) {
                p.generation = generation;
                lines.push(line);
            }
        }
        lines
    }
}
