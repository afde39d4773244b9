//! The tool a `tools/call` named, kept from the request until its result is judged (issue
//! 29), so decisions on a `tools/call` *result* (embedded resources, links) name the tool as
//! the request's do.
//!
//! Each host request's session-unique key (written as `request` on every decision about it
//! and about its result) is the relay's: it numbers host requests as they arrive and carries
//! the key to the answer (`Intercepted::request`), so nothing here is kept or locked for any
//! other method. The table is keyed by that key, not by the JSON-RPC id (which a host may use
//! again once answered).
//!
//! An entry lives from the request to its answer. An answer the enforcer never judges (one
//! the tripwire withheld, a cancelled request) would leave its entry behind, so the table is
//! bounded: past [`MAX_OPEN`] entries the older half is forgotten (their results, if they
//! ever come, are recorded without the tool).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::jsonrpc::Kind;
use crate::mcp::methods as m;
use crate::relay::Side;

/// Entries kept at most (a host has far fewer tool calls in flight).
const MAX_OPEN: usize = 4096;

/// The tools of the `tools/call` requests in flight, by request key.
#[derive(Debug, Default)]
pub(super) struct ToolCalls {
    open: Mutex<HashMap<u64, Arc<str>>>,
}

impl ToolCalls {
    /// The tool of the message being handled: a host's `tools/call` request names it (and it
    /// is kept under the request's `key`); its result takes it and ends the entry. Anything
    /// else has none, and costs one comparison of its method.
    pub(super) fn on_message(
        &self,
        from: Side,
        kind: Kind,
        key: Option<u64>,
        method: &str,
        message: &Value,
    ) -> Option<Arc<str>> {
        if method != m::TOOLS_CALL {
            return None;
        }
        let key = key?;
        match (from, kind) {
            (Side::Host, Kind::Request) => {
                // `get` twice, not `pointer`: a JSON pointer is parsed on every call.
                let tool: Arc<str> = message.get("params")?.get("name")?.as_str()?.into();
                let mut open = crate::relock(&self.open);
                if open.len() >= MAX_OPEN {
                    let keep_after = key.saturating_sub(MAX_OPEN as u64 / 2);
                    open.retain(|k, _| *k > keep_after);
                }
                open.insert(key, Arc::clone(&tool));
                Some(tool)
            }
            (Side::Server, Kind::Response | Kind::ErrorResponse) => {
                crate::relock(&self.open).remove(&key)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_result_takes_its_requests_tool_once() {
        let t = ToolCalls::default();
        let call = json!({"params": {"name": "read_file"}});
        let a = t.on_message(Side::Host, Kind::Request, Some(1), m::TOOLS_CALL, &call);
        assert_eq!(a.as_deref(), Some("read_file"));
        let res = t.on_message(
            Side::Server,
            Kind::Response,
            Some(1),
            m::TOOLS_CALL,
            &json!({}),
        );
        assert_eq!(res.as_deref(), Some("read_file"));
        let again = t.on_message(
            Side::Server,
            Kind::Response,
            Some(1),
            m::TOOLS_CALL,
            &json!({}),
        );
        assert_eq!(again, None);
        // Another method is never kept, and takes no lock.
        let read = json!({"params": {"name": "x", "uri": "file:///a"}});
        let r = t.on_message(Side::Host, Kind::Request, Some(2), m::RESOURCES_READ, &read);
        assert_eq!(r, None);
        assert!(t.open.lock().unwrap().is_empty());
    }

    #[test]
    fn unanswered_calls_cannot_grow_the_table() {
        let t = ToolCalls::default();
        let call = json!({"params": {"name": "read_file"}});
        for key in 1..=(MAX_OPEN as u64 * 3) {
            t.on_message(Side::Host, Kind::Request, Some(key), m::TOOLS_CALL, &call);
        }
        assert!(t.open.lock().unwrap().len() <= MAX_OPEN);
    }
}
